SELECT
    rank,
    seq,
    op_name,
    op_type,
    tensors_json
FROM {{ source('op_desc') }}
