SELECT rank, op_type, occurrences AS type_occurrences,
       printf('%.6g', total_ns / 1e3) AS "total_time(us)",
       printf('%.6g', share) AS total_proportion,
       printf('%.6g', total_ns / 1e3 / occurrences) AS "avg_time(us)",
       total_ns
FROM {{ ref('op_type_stats') }}
WHERE side = 'Device'
