-- Ranks where one op repeats a sequence of at least 3 small kernels (averaging under 10 µs each) at least 5 times
-- and that sequence's device time is a notable share of the rank's (kernel_sequence_stats): the largest such share,
-- with the op and the sequence.
SELECT rank, NULL::INTEGER AS capture, NULL::BIGINT AS step, max(device_share) AS value,
       arg_max(op_name, device_share) AS op_name, arg_max(sequence, device_share) AS sequence,
       arg_max(instances, device_share) AS instances
FROM {{ ref('kernel_sequence_stats') }}
WHERE kernels >= 3 AND instances >= 5 AND kernel_ns < 10000 * kernels * instances
GROUP BY rank
HAVING max(device_share) > {{ threshold }}
