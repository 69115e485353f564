SELECT rank, side, op_type, input_shape, count(*) AS instances, sum(occurrences)::BIGINT AS occurrences,
       sum(total_ns)::BIGINT AS total_ns
FROM {{ ref('op_instance_shape') }}
GROUP BY rank, side, op_type, input_shape
