SELECT
    rank,
    source,
    check_name,
    action,
    events,
    rows,
    first_file,
    first_offset,
    first_line,
    example,
    tables,
    message
FROM {{ source('trace_health') }}
