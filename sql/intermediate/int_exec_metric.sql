SELECT
    m.rank,
    m.capture,
    m.stream_id,
    m.task_id,
    m.start_ns,
    coalesce(e.op_name, e.name) AS op_name,
    e.dur_ns,
    m.core,
    m.metric,
    m.value,
    m.unit
FROM {{ ref('stg_device_exec_metric') }} m
JOIN {{ ref('stg_device_exec') }} e
  ON e.rank = m.rank AND e.capture = m.capture AND e.stream_id = m.stream_id AND e.task_id = m.task_id
 AND e.start_ns = m.start_ns
