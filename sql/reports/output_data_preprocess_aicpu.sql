SELECT a.rank, r.device_id, a.seq + 1 AS serial_number, a.op_type AS node_type_name,
       a.total_ns // 1000 / 1e3 AS "total_time(ms)", a.dispatch_ns // 1000 / 1e3 AS "dispatch_time(ms)",
       a.run_start_ns // 1000 AS run_start, a.run_end_ns // 1000 AS run_end
FROM {{ ref('aicpu_op_exec') }} a
JOIN {{ ref('ascend_rank') }} r USING (rank)
