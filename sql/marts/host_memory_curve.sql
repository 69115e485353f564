SELECT rank, capture, row_number() OVER (PARTITION BY rank, capture ORDER BY line) AS sample, line, ts_ns,
       memory_bytes, tid, pid, parent_pid, module, event, stage, level, kind, custom_info
FROM {{ ref('stg_host_info_record') }}
WHERE memory_bytes IS NOT NULL
