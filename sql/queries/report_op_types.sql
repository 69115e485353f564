-- Report, operators page: time per op type and side (Host: framework ops; Device: their device executions)
-- summed over ranks, with its share of the side's time; the $top largest of each side.
SELECT side, op_type, sum(occurrences) AS occurrences, sum(total_ns) / 1e6 AS total_ms,
       sum(total_ns) / nullif(sum(sum(total_ns)) OVER (PARTITION BY side), 0) AS share
FROM op_type_stats
GROUP BY side, op_type
QUALIFY row_number() OVER (PARTITION BY side ORDER BY sum(total_ns) DESC, op_type) <= $top
ORDER BY side, total_ms DESC, op_type
