WITH device_ops AS (
    SELECT rank, capture, op_name, start_ns FROM {{ ref('stg_host_op') }} WHERE side = 'Device'
)
SELECT
    d.rank,
    d.capture,
    d.stream_id,
    d.kind,
    d.name,
    d.correlation,
    d.task_id,
    d.start_ns,
    d.dur_ns,
    d.start_ns + d.dur_ns AS end_ns,
    coalesce(d.op_name, o.op_name, m.op_name) AS op_name,
    CASE WHEN d.op_name IS NOT NULL THEN 'source'
         WHEN o.op_name IS NOT NULL THEN 'time'
         WHEN m.op_name IS NOT NULL THEN 'profiler' END AS op_attribution,
    d.op_index
FROM {{ ref('stg_device_exec') }} d
ASOF LEFT JOIN device_ops o ON d.rank = o.rank AND d.capture = o.capture AND d.start_ns >= o.start_ns
LEFT JOIN {{ ref('stg_kernel_meta') }} m ON m.rank = d.rank AND m.capture = d.capture AND m.name = d.name
