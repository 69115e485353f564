-- Report, operators page: each rank's op time on the host (framework ops) and on the device (their executions), ms.
SELECT rank, side, sum(total_ns) / 1e6 AS total_ms
FROM op_type_stats
GROUP BY rank, side
ORDER BY rank, side
