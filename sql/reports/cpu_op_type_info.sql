SELECT rank, op_type, occurrences AS type_occurrences,
       executions_per_step AS "execution_frequency(per-step)",
       printf('%.6g', total_ns / 1e6) AS total_compute_time,
       printf('%.6g', total_ns / 1e6 / occurrences) AS "avg_time(ms)",
       printf('%.6g', share) AS percent,
       total_ns
FROM {{ ref('op_type_stats') }}
WHERE side = 'Host'
