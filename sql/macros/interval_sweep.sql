-- interval_sweep(intervals): table macro: the sweep-line over intervals that tells, for every stretch of a
-- timeline, which kinds of interval cover it (the basis of overlap analyses: computation against
-- communication, busy against idle). `intervals` names a table, view or CTE with the columns
-- grp (any type: the timeline an interval lies on, e.g. {'rank': rank, 'capture': capture}), category
-- (VARCHAR: its kind; at most 6 kinds) and start_ns <= end_ns (half-open [start_ns, end_ns); rows with a
-- NULL bound or end_ns < start_ns are left out). Every distinct start and end of a group cuts its
-- timeline; one row comes out per stretch between two consecutive cuts: grp, start_ns, end_ns and
-- categories, the sorted distinct categories of the intervals covering the whole stretch ([] in a gap).
-- Intervals of a category that nest, overlap or touch count once; a zero-length interval only cuts (a
-- step edge that no stretch may straddle). Callers merge adjacent stretches they label alike.
-- One pass: +1 at each start and -1 at each end, summed per cut and then as a running sum over the
-- group's cuts; the counts of all categories travel together in one HUGEINT, 20 bits per category
-- (fewer than 2^20 intervals of one category open at once).
-- SELECT * FROM interval_sweep(my_intervals)
CREATE MACRO interval_sweep(intervals) AS TABLE
WITH given AS (
    SELECT grp, category, start_ns, end_ns FROM query_table(intervals) WHERE start_ns <= end_ns
), named AS (
    SELECT list_sort(list_distinct(list(category))) AS categories FROM given
), units AS (  -- the interval's 1 in its category's bits: category i (1-based) counts in bits 20 (i - 1) and up
    SELECT grp, start_ns, end_ns,
           CASE WHEN len(categories) > 6 THEN error('interval_sweep: more than 6 categories')
                ELSE 1::HUGEINT << (20 * (list_position(categories, category) - 1)) END AS unit
    FROM given, named
), cuts AS (  -- per group and time: the intervals opened there minus those closed there
    SELECT grp, at_ns, sum(delta) AS delta
    FROM (SELECT grp, start_ns AS at_ns, unit AS delta FROM units UNION ALL SELECT grp, end_ns, -unit FROM units)
    GROUP BY grp, at_ns
)
SELECT grp, start_ns, end_ns, list_filter(categories, lambda c, i: (open >> (20 * (i - 1))) & 1048575 > 0) AS categories
FROM (SELECT grp, at_ns AS start_ns, lead(at_ns) OVER w AS end_ns, sum(delta) OVER (w ROWS UNBOUNDED PRECEDING) AS open
      FROM cuts WINDOW w AS (PARTITION BY grp ORDER BY at_ns)), named
WHERE end_ns IS NOT NULL
