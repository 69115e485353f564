SELECT rank, capture,
       row_number() OVER (PARTITION BY rank ORDER BY start_ns, stream_id, task_id) AS seq,
       op_name, stream_id, task_id, start_ns, dur_ns
FROM {{ ref('int_device_exec') }}
WHERE kind = 'task'
