-- Report, step trace page (profpipe/report/pages.py): per rank, the steps of a multi-rank run in which it was the
-- slowest (cluster_step_phases), the rank slowest most often first.
SELECT slowest_rank, count(DISTINCT step) AS steps
FROM cluster_step_phases
WHERE ranks > 1
GROUP BY slowest_rank
ORDER BY 2 DESC, 1
