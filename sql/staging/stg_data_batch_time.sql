SELECT
    rank,
    capture,
    trace,
    batch,
    kind,
    dur_ns,
    ts_ns
FROM {{ source('data_batch_time') }}
