WITH shapes AS (  -- the input shapes an op was launched with, every one of them
    SELECT rank, side, short_name,
           string_agg(DISTINCT replace(input_shapes, ';', ','), ' | '
                      ORDER BY replace(input_shapes, ';', ',')) AS input_shape
    FROM {{ ref('stg_op_meta') }}
    GROUP BY rank, side, short_name
)
SELECT d.rank, d.side, d.op_name, d.short_name, d.op_type, coalesce(s.input_shape, '') AS input_shape,
       d.occurrences, d.total_ns
FROM {{ ref('op_detail_stats') }} d
LEFT JOIN shapes s USING (rank, side, short_name)
