SELECT rank, capture, trace AS queue, count(*) AS batches,
       count(*) FILTER (WHERE queue_empty) AS empty_batches,
       count(*) FILTER (WHERE queue_full) AS full_batches,
       count(*) FILTER (WHERE queue_empty) / count(*) AS empty_share,
       avg(queue_size) AS avg_size, max(queue_size) AS max_size, max(queue_capacity) AS capacity
FROM {{ ref('data_batch_stats') }}
WHERE queue_size IS NOT NULL
GROUP BY rank, capture, trace
