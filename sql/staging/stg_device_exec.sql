-- stg_device_exec: one row per device activity execution (kernel, memcpy, memset, Ascend task) with the framework op that owns it.
-- Columns:
--   rank, capture, stream_id, kind, name, correlation, task_id, start_ns, dur_ns: as in device_exec.
--   end_ns: start_ns + dur_ns.
--   op_name: owning op. The op the source names for the activity (Ascend tasks); else, per
--            execution, the device-side op (side = 'Device') of the same rank and capture that started last at
--            or before the activity started; else the op the profiler recorded for the kernel
--            name (kernel_meta).
--   op_attribution: 'source', 'time', 'profiler' (as above, in that order) or NULL (unknown).
-- computed once per run (read by most marts and exports; computing it once is much cheaper)
WITH device_ops AS (
    SELECT rank, capture, op_name, start_ns FROM stg_host_op WHERE side = 'Device'
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
         WHEN m.op_name IS NOT NULL THEN 'profiler' END AS op_attribution
FROM device_exec d
ASOF LEFT JOIN device_ops o ON d.rank = o.rank AND d.capture = o.capture AND d.start_ns >= o.start_ns
LEFT JOIN kernel_meta m ON m.rank = d.rank AND m.capture = d.capture AND m.name = d.name
