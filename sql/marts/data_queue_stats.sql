-- data_queue_stats: one row per MindData batch queue of a rank (rank, queue): how often it was empty or full.
-- Columns:
--   rank; queue: device_queue (host side of data-sink mode), iterator (non-sink) or get_next (the device's queue).
--   batches: records with a queue size; empty_batches (size 0), full_batches (size = capacity).
--   empty_pct = 100 * empty_batches / batches; avg_size, max_size, capacity (NULL where the file has none).
SELECT rank, trace AS queue, count(*) AS batches,
       count(*) FILTER (WHERE queue_empty) AS empty_batches,
       count(*) FILTER (WHERE queue_full) AS full_batches,
       100.0 * count(*) FILTER (WHERE queue_empty) / count(*) AS empty_pct,
       avg(queue_size) AS avg_size, max(queue_size) AS max_size, max(queue_capacity) AS capacity
FROM data_batch_stats
WHERE queue_size IS NOT NULL
GROUP BY rank, trace
