-- step_list (profpipe/step_filter.py): per profiling cycle (rank, capture) with a step trace, the window of
-- the steps $first..$last, from the step_point Parquet file $step_points. MindSpore's steps overlap (a step
-- starts where the previous one's iteration-end op starts), so a row is kept when it starts after the end
-- of the step before $first (at or after $first's start when there is none) and at or before $last's end.
SELECT rank, capture,
       min(ts_ns) FILTER (WHERE step = $first AND kind = 'step_start') AS start_ns,
       max(ts_ns) FILTER (WHERE step = $first - 1 AND kind = 'step_end') AS previous_end_ns,
       max(ts_ns) FILTER (WHERE step = $last AND kind = 'step_end') AS end_ns
FROM read_parquet($step_points)
GROUP BY rank, capture
