-- MindSpore's pairing (_parse_host_info, 2.2): per (event, stage, thread, process), in file order, a start is
-- held until the next row of the key; an end right after a start closes it (a span), a start right after a start
-- replaces it, an end after anything else has no start. Instants stand alone. Rows without a time take no part.
WITH timed AS (
    SELECT *,
           lag(kind) OVER w AS prev_kind, lag(ts_ns) OVER w AS prev_ts_ns, lag(line) OVER w AS prev_line,
           lead(kind) OVER w AS next_kind
    FROM {{ ref('stg_host_info_record') }}
    WHERE ts_ns IS NOT NULL AND kind IN ('start', 'end')
    WINDOW w AS (PARTITION BY rank, capture, event, stage, tid, pid ORDER BY line)
)
SELECT rank, capture, pid, parent_pid, tid, module, event, stage, event || '::' || stage AS name, level,
       CASE WHEN prev_kind = 'start' THEN 'span' ELSE 'orphan_end' END AS kind, custom_info,
       CASE WHEN prev_kind = 'start' THEN prev_ts_ns END AS start_ns, ts_ns AS end_ns,
       CASE WHEN prev_kind = 'start' THEN ts_ns - prev_ts_ns END AS dur_ns,
       CASE WHEN prev_kind = 'start' THEN prev_line END AS start_line, line AS end_line, line
FROM timed WHERE kind = 'end'
UNION ALL
SELECT rank, capture, pid, parent_pid, tid, module, event, stage, event || '::' || stage, level, 'open_start',
       custom_info, ts_ns, NULL, NULL, line, NULL, line
FROM timed WHERE kind = 'start' AND next_kind IS NULL
UNION ALL
SELECT rank, capture, pid, parent_pid, tid, module, event, stage, event || '::' || stage, level, 'instant',
       custom_info, ts_ns, ts_ns, 0, line, line, line
FROM {{ ref('stg_host_info_record') }}
WHERE ts_ns IS NOT NULL AND kind = 'instant'
