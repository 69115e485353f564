-- step_list (profpipe/step_filter.py): the profiling cycles whose step trace does not hold all of the steps
-- $first..$last, with the steps they have (an error names them: never a silently empty result).
SELECT rank, capture, min(step), max(step)
FROM read_parquet($step_points)
WHERE kind = 'step_end'
GROUP BY rank, capture
HAVING min(step) > $first OR max(step) < $last
ORDER BY rank, capture
