-- Report, operators page: the kernels each op launched (op_kernel_stats) and the Ascend device tasks each host op
-- launched (device_exec linked to its op by op_index: torch_npu's torch_to_npu), for the drill-down from an op's row;
-- only the ops the report lists ($top by total time, as report_ops).
WITH listed AS (SELECT rank, op_name FROM op_detail_stats ORDER BY total_ns DESC, rank, op_name LIMIT $top),
tasks AS (
    SELECT e.rank, h.op_name, e.name, count(*) AS instances, sum(e.dur_ns) AS total_ns,
           sum(e.dur_ns) / nullif(sum(sum(e.dur_ns)) OVER (PARTITION BY e.rank, h.op_name), 0) AS share_of_op
    FROM device_exec e JOIN host_op h USING (rank, capture, op_index)
    WHERE e.kind = 'task'
    GROUP BY e.rank, h.op_name, e.name
), launched AS (
    SELECT rank, op_name, name, instances, total_ns, share_of_op FROM op_kernel_stats
    UNION ALL
    SELECT rank, op_name, name, instances, total_ns, share_of_op FROM tasks
)
SELECT k.rank, k.op_name, k.name, k.instances, k.total_ns / 1e6 AS total_ms, k.total_ns / k.instances / 1e6 AS avg_ms,
       k.share_of_op
FROM launched k JOIN listed USING (rank, op_name)
ORDER BY k.rank, k.op_name, k.total_ns DESC, k.name
