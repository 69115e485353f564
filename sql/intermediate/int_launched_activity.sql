-- Each device activity (kernel, memcpy, memset, sync) with the runtime or driver call that launched it: the call
-- with its correlation id, the last one that started at or before it (NULL call columns where the trace has none).
SELECT d.rank, d.capture, d.stream_id, d.kind, d.name, d.correlation, d.start_ns, d.dur_ns, d.bytes, d.wait_stream_id, d.wait_correlation,
       a.name AS api_name, a.tid, a.start_ns AS call_start_ns, a.dur_ns AS call_dur_ns
FROM {{ ref('stg_device_exec') }} d
ASOF LEFT JOIN {{ ref('stg_host_api') }} a
    ON a.rank = d.rank AND a.capture = d.capture AND a.correlation = d.correlation AND d.start_ns >= a.start_ns
WHERE d.kind IN ('kernel', 'memcpy', 'memset', 'sync')
