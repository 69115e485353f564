-- stg_device_exec: one row per device activity execution (kernel, memcpy, memset) with the framework op that owns it.
-- Columns:
--   rank, stream_id, kind, name, correlation, start_ns, dur_ns: as in device_exec.
--   end_ns: start_ns + dur_ns.
--   op_name: owning op. Per execution, the device-side op (side = 'Device') of the same rank that
--            started last at or before the activity started; where no such op exists, the op the
--            profiler recorded for the kernel name (kernel_meta).
--   op_attribution: 'time' (per execution, as above), 'profiler' (kernel_meta) or NULL (unknown).
WITH device_ops AS (
    SELECT rank, op_name, start_ns FROM stg_host_op WHERE side = 'Device'
)
SELECT
    d.rank,
    d.stream_id,
    d.kind,
    d.name,
    d.correlation,
    d.start_ns,
    d.dur_ns,
    d.start_ns + d.dur_ns AS end_ns,
    coalesce(o.op_name, m.op_name) AS op_name,
    CASE WHEN o.op_name IS NOT NULL THEN 'time'
         WHEN m.op_name IS NOT NULL THEN 'profiler' END AS op_attribution
FROM device_exec d
ASOF LEFT JOIN device_ops o ON d.rank = o.rank AND d.start_ns >= o.start_ns
LEFT JOIN kernel_meta m ON m.rank = d.rank AND m.name = d.name
