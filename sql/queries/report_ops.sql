-- Report, operators page: the $top ops of the run by total time (op_detail_stats), with their device time: a device
-- op's own executions, a host op's device time with that of the ops nested in it (host_op_stats, as PyTorch's
-- Operator view: torch_npu's and PyTorch's ops are host ops whose tasks and kernels they launch).
SELECT o.rank, o.side, o.op_name, o.op_type, o.occurrences, o.total_ns / 1e6 AS total_ms, o.avg_ns / 1e6 AS avg_ms,
       o.max_ns / 1e6 AS max_ms, o.share, o.device_exec_count,
       (CASE o.side WHEN 'Host' THEN coalesce(h.device_total_ns, 0) ELSE o.device_exec_total_ns END) / 1e6 AS device_ms
FROM op_detail_stats o
LEFT JOIN host_op_stats h ON o.side = 'Host' AND h.rank = o.rank AND h.op_name = o.op_name
ORDER BY o.total_ns DESC, o.rank, o.op_name
LIMIT $top
