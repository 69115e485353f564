-- Report, step trace page: the FP and BP points each rank's step phases used, with the steps that used them.
SELECT rank, capture, fp_op, bp_op, count(*) AS steps
FROM step_phases
WHERE fp_op IS NOT NULL OR bp_op IS NOT NULL
GROUP BY ALL
ORDER BY rank, capture, steps DESC
