SELECT
    rank,
    capture,
    scope,
    op_id,
    sample,
    user_pct,
    sys_pct,
    io_pct,
    idle_pct,
    memory_mb,
    ts_ns
FROM {{ source('data_cpu_sample') }}
