SELECT rank, op_type, short_name, op_name, lower(CASE side WHEN 'Host' THEN 'cpu' ELSE 'gpu' END) AS op_side,
       input_shape, occurrences AS op_occurrences, total_ns
FROM {{ ref('op_instance_shape') }}
