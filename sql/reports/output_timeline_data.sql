SELECT e.rank, r.device_id, e.seq,
       e.op_name || ',' || e.stream_id || ',' || (e.start_ns / 1e6)::VARCHAR || ',' || (e.dur_ns / 1e6)::VARCHAR AS line
FROM {{ ref('ascend_task_exec') }} e
JOIN {{ ref('ascend_rank') }} r USING (rank)
