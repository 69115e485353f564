-- Report, operators page: the $top (op, kernel, counter) groups of CUPTI range-profiler counters by total value
-- (kernel_counter_stats; the section is there only when the trace has counters).
SELECT rank, counter, bottom_level_op, kernel_name, kernels, total_value, avg_value, max_value
FROM kernel_counter_stats
ORDER BY counter, total_value DESC, rank, bottom_level_op NULLS LAST, kernel_name
LIMIT $top
