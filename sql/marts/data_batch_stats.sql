WITH times AS (
    SELECT rank, capture, trace, batch,
           max(dur_ns) FILTER (WHERE kind = 'pipeline') AS pipeline_ns,
           max(dur_ns) FILTER (WHERE kind = 'push') AS push_ns,
           max(dur_ns) FILTER (WHERE kind = 'batch') AS batch_ns,
           max(dur_ns) FILTER (WHERE kind = 'get_next_wait') AS get_next_wait_ns,
           min(ts_ns) AS first_ns
    FROM {{ ref('stg_data_batch_time') }} GROUP BY rank, capture, trace, batch
), queues AS (
    SELECT rank, capture, queue AS trace, coalesce(batch, sample + 1) AS batch, size AS queue_size, capacity AS queue_capacity,
           ts_ns, ts_ns - lag(ts_ns) OVER (PARTITION BY rank, capture, queue ORDER BY sample) AS since_previous_ns
    FROM {{ ref('stg_queue_sample') }} WHERE queue IN ('device_queue', 'iterator', 'get_next')
)
SELECT rank, capture, trace, batch, t.pipeline_ns, t.push_ns, t.batch_ns, q.since_previous_ns, t.get_next_wait_ns, q.queue_size, q.queue_capacity,
       q.queue_size = 0 AS queue_empty, q.queue_size = q.queue_capacity AS queue_full,
       coalesce(q.ts_ns, t.first_ns) AS ts_ns
FROM times t FULL JOIN queues q USING (rank, capture, trace, batch)
