SELECT
    rank,
    capture,
    scope,
    op_id,
    sample,
    user_share,
    sys_share,
    io_share,
    idle_share,
    user_cpus,
    sys_cpus,
    memory_bytes,
    ts_ns
FROM {{ source('data_cpu_sample') }}
