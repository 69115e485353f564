SELECT
    rank,
    capture,
    trace,
    batch,
    kind,
    ms,
    ts_ns
FROM {{ source('data_batch_time') }}
