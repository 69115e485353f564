-- profpipe search: kernels summed over their streams, with the op most of their time belongs to
SELECT 'kernel' AS kind, name, arg_max(op_name, total_ns) AS type, rank, sum(instances)::BIGINT AS calls,
       sum(total_ns)::BIGINT AS total_ns, sum(total_ns)::BIGINT AS device_ns, 'kernel_stats' AS source,
       'Device' AS side, 3 AS priority, {run} AS run
FROM kernel_stats
GROUP BY ALL
