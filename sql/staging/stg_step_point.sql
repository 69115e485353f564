SELECT
    rank,
    capture,
    step,
    kind,
    op_name,
    seq,
    stream_id,
    tag,
    ts_ns
FROM {{ source('step_point') }}
