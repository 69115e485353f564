SELECT t.rank, r.device_id, t.op_type, t.total_ns / 1e6 AS total_time, t.executions AS execution_frequency,
       t.share AS percent, t.total_ns
FROM {{ ref('device_op_type_stats') }} t
JOIN {{ ref('ascend_rank') }} r USING (rank)
