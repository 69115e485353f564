-- Report, operators page: fusion candidates, the $top kernel sequences (kernel_sequence_stats) of at least 3 device
-- activities that an op launched at least twice, by their total device time. A sequence an op launches only through
-- the op nested in it is shown once, under the innermost op (the deepest op with the same sequence and counts).
SELECT rank, op_name, sequence, activities, kernels, instances, device_ns / 1e6 AS device_ms,
       avg_device_ns / 1e6 AS avg_ms, device_share AS share
FROM kernel_sequence_stats
WHERE activities >= 3 AND instances >= 2
QUALIFY row_number() OVER (PARTITION BY rank, sequence, instances, device_ns ORDER BY op_depth DESC, op_name) = 1
ORDER BY device_ns DESC, rank, op_name, sequence
LIMIT $top
