-- Report, data pipeline page: each MindData op's output-queue samples as a share of its capacity (data_op_stats):
-- sample k was taken at k * sampling_interval_ns after the first; at most $max_samples samples per op, evenly
-- picked (every n-th) when there are more.
WITH samples AS (
    SELECT rank, capture, op_id, op_name, queue_capacity, sampling_interval_ns, len(queue_sizes) AS n,
           unnest(queue_sizes) AS size, generate_subscripts(queue_sizes, 1) AS k
    FROM data_op_stats
    WHERE len(queue_sizes) > 0 AND queue_capacity > 0
)
SELECT rank, capture, op_id, op_name || '(id=' || op_id || ')' AS op,
       list((k - 1) * sampling_interval_ns / 1e9 ORDER BY k) AS seconds,
       list(size / queue_capacity ORDER BY k) AS usage
FROM samples
WHERE (k - 1) % greatest(1, ceil(n / $max_samples))::BIGINT = 0
GROUP BY rank, capture, op_id, op_name
ORDER BY rank, capture, op_id
