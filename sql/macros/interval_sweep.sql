-- interval_sweep(intervals): table macro: the sweep-line over intervals that tells, for every stretch of a
-- timeline, which kinds of interval cover it (the basis of overlap analyses: computation against
-- communication, busy against idle). `intervals` names a table, view or CTE with the columns
-- grp (any type: the timeline an interval lies on, e.g. {'rank': rank, 'capture': capture}), category
-- (VARCHAR: its kind) and start_ns <= end_ns (half-open [start_ns, end_ns); rows with a NULL bound are
-- left out). Every distinct start and end of a group cuts its timeline; one row comes out per stretch
-- between two consecutive cuts: grp, start_ns, end_ns and categories, the sorted distinct categories of
-- the intervals covering the whole stretch ([] in a gap). Intervals of a category that nest, overlap
-- or touch count once; a zero-length interval only cuts (a step edge that no stretch may straddle).
-- Stretches never straddle a cut, so callers merge adjacent stretches they label alike themselves.
-- SELECT * FROM interval_sweep(my_intervals)
CREATE MACRO interval_sweep(intervals) AS TABLE
WITH edges AS (  -- +1 where an interval opens, -1 where it closes, per group, category and time
    SELECT grp, category, at_ns, sum(delta) AS delta
    FROM (SELECT grp, category, start_ns AS at_ns, 1 AS delta FROM query_table(intervals)
          WHERE start_ns IS NOT NULL AND end_ns IS NOT NULL
          UNION ALL
          SELECT grp, category, end_ns, -1 FROM query_table(intervals)
          WHERE start_ns IS NOT NULL AND end_ns IS NOT NULL)
    GROUP BY grp, category, at_ns
), counted AS (  -- every category of a group counted at every cut of the group: intervals open after it
    SELECT grp, category, at_ns,
           sum(coalesce(delta, 0)) OVER (PARTITION BY grp, category ORDER BY at_ns ROWS UNBOUNDED PRECEDING) AS open
    FROM (SELECT DISTINCT grp, at_ns FROM edges)
    JOIN (SELECT DISTINCT grp, category FROM edges) USING (grp)
    LEFT JOIN edges USING (grp, category, at_ns)
), cuts AS (
    SELECT grp, at_ns, list(category ORDER BY category) FILTER (WHERE open > 0) AS categories
    FROM counted GROUP BY grp, at_ns
)
SELECT grp, start_ns, end_ns, categories
FROM (SELECT grp, at_ns AS start_ns, lead(at_ns) OVER (PARTITION BY grp ORDER BY at_ns) AS end_ns,
             coalesce(categories, []::VARCHAR[]) AS categories
      FROM cuts)
WHERE end_ns IS NOT NULL
