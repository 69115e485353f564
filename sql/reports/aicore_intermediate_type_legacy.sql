SELECT t.rank, r.device_id, t.op_type, round(t.per_step_ns / 1e6, 6) AS execution_time,
       t.instances AS execution_frequency, round(t.per_step_share * 100, 2) AS percent, t.per_step_ns
FROM {{ ref('device_op_type_stats') }} t
JOIN {{ ref('ascend_rank') }} r USING (rank)
