-- Report, operators page: the roofline chart's and table's rows (op_roofline): the ops with FLOPs and device time,
-- the most device time first ($top), in the report's units (ms, TFLOP/s, GB/s).
SELECT rank, op_name, op_class, input_dims, dtype, executions, device_ns / 1e6 AS device_ms, device_share,
       intensity_flop_per_byte, achieved_flop_per_second / 1e12 AS achieved_tflops,
       achieved_bytes_per_second / 1e9 AS achieved_gbps, device_name,
       peak_flop_per_second / 1e12 AS peak_tflops, peak_bytes_per_second / 1e9 AS peak_gbps,
       ridge_flop_per_byte, bound, roof_ratio
FROM op_roofline
WHERE flop > 0 AND bytes > 0
ORDER BY device_ns DESC, rank, op_name, input_dims, dtype
LIMIT $top
