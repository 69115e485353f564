SELECT rank, op_type, lower(CASE side WHEN 'Host' THEN 'cpu' ELSE 'gpu' END) AS op_side, input_shape,
       occurrences AS op_occurrences, round(total_ns / 1e3, 4) AS "op_total_time(us)",
       round(total_ns / 1e3 / occurrences, 4) AS "op_avg_time(us)"
FROM {{ ref('op_shape_stats') }}
