SELECT rank, 'Device' AS op_side, op_type, short_name AS op_name, op_name AS op_full_name,
       occurrences AS op_occurrences,
       printf('%.6g', total_ns / 1e3) AS "op_total_time(us)",
       printf('%.6g', total_ns / 1e3 / occurrences) AS "op_avg_time(us)",
       printf('%.6g', share) AS total_proportion,
       printf('%.6g', device_exec_total_ns / 1e3) AS "cuda_activity_cost_time(us)",
       device_exec_count AS cuda_activity_call_count,
       total_ns
FROM {{ ref('op_detail_stats') }}
WHERE side = 'Device'
