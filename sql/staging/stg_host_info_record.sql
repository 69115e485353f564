SELECT
    rank,
    capture,
    line,
    tid,
    pid,
    parent_pid,
    module,
    event,
    stage,
    level,
    kind,
    custom_info,
    memory_bytes,
    ts_ns
FROM {{ source('host_info_record') }}
