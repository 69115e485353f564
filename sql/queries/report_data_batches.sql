-- Report, data pipeline page: each input trace's batches (data_batch_stats): how many, their rate and the time the
-- training loop waited for the next one.
SELECT rank, capture, trace, count(*) AS batches,
       count(*) / nullif((max(ts_ns) - min(ts_ns)) / 1e9, 0) AS batches_per_second,
       avg(batch_ns) / 1e6 AS avg_batch_ms, avg(get_next_wait_ns) / 1e6 AS avg_get_next_wait_ms,
       avg(CASE WHEN queue_empty THEN 1 ELSE 0 END) AS empty_queue_share
FROM data_batch_stats
GROUP BY rank, capture, trace
ORDER BY rank, capture, trace
