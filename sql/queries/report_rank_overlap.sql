-- Report, utilisation page: each rank's steps summed (step_overlap): the shares of computation, communication left
-- over after overlap and free (idle) time in its step time.
SELECT rank, sum(total_ns) / 1e6 AS total_ms,
       sum(computation_ns) / nullif(sum(total_ns), 0) AS computation_share,
       sum(pure_communication_ns) / nullif(sum(total_ns), 0) AS communication_share,
       sum(free_ns) / nullif(sum(total_ns), 0) AS free_share
FROM step_overlap
GROUP BY rank
ORDER BY rank
