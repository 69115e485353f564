-- Report, utilisation page: each window's critical path (critical_path_summary) split by what its time is, in ms (the
-- parts add up to the path's length), the first $max_steps windows of each rank.
SELECT rank, capture, step, path_length_ns / 1e6 AS length_ms, cpu_ns / 1e6 AS cpu_ms,
       gpu_compute_ns / 1e6 AS gpu_compute_ms, gpu_communication_ns / 1e6 AS gpu_communication_ms,
       launch_ns / 1e6 AS launch_ms, kernel_kernel_ns / 1e6 AS kernel_kernel_ms, sync_edges, top_op, top_kernel
FROM critical_path_summary
QUALIFY row_number() OVER (PARTITION BY rank ORDER BY capture, step NULLS FIRST) <= $max_steps
ORDER BY rank, capture, step NULLS FIRST
