-- Report, operators page: the kernels each op launched (op_kernel_stats), for the drill-down from an op's row;
-- only the ops the report lists ($top by total time, as report_ops).
WITH listed AS (SELECT rank, op_name FROM op_detail_stats ORDER BY total_ns DESC, rank, op_name LIMIT $top)
SELECT k.rank, k.op_name, k.name, k.instances, k.total_ns / 1e6 AS total_ms, k.avg_ns / 1e6 AS avg_ms,
       k.share_of_op
FROM op_kernel_stats k JOIN listed USING (rank, op_name)
ORDER BY k.rank, k.op_name, k.total_ns DESC, k.name
