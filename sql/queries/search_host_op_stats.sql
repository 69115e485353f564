-- profpipe search: PyTorch / Paddle / NVTX host ops, typed by their category, with the device time they launched
SELECT 'op' AS kind, op_name AS name, category AS type, rank, calls, host_total_ns AS total_ns,
       device_total_ns AS device_ns, 'host_op_stats' AS source, 'Host' AS side, 2 AS priority, {run} AS run
FROM host_op_stats
