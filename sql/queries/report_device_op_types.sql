-- Report, operators page: device time per op type (Ascend tasks and GPU kernels by their op) summed over ranks,
-- with its share; the $top largest.
SELECT op_type, sum(executions) AS executions, sum(total_ns) / 1e6 AS total_ms,
       sum(total_ns) / nullif(sum(sum(total_ns)) OVER (), 0) AS share
FROM device_op_type_stats
GROUP BY op_type
QUALIFY row_number() OVER (ORDER BY sum(total_ns) DESC, op_type) <= $top
ORDER BY total_ms DESC, op_type
