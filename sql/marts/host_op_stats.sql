-- host_op_stats: one row per host op name of a rank (rank, op_name; summed over its captures, whose op_index trees are kept apart) with its calls and its host and device time, self and total, as the Operator view of PyTorch's and Paddle's profilers shows them.
-- Columns:
--   rank, op_name; category: the source's (Kineto: cpu_op or user_annotation; NULL for MindSpore ops).
--   calls: executions.
--   host_total_ns: their summed durations (an op that calls itself counts twice, as in PyTorch's view).
--   host_self_ns: host_total_ns minus the time of the ops nested directly in them (host_op.parent_index:
--     PyTorch's nesting rule, applied by the reader); ops of sources without nesting are their own self.
--   device_self_ns: device time (kernels, memcpy, memset) the op launched itself (device_exec.op_index:
--     Kineto's External id, else the op the launch was made in); device_total_ns: the same with what the
--     ops nested in it launched.
--   host_self_share: host_self_ns / the rank's summed host_self_ns (self times do not double count nesting).
WITH RECURSIVE own AS (
    SELECT h.rank, h.capture, h.op_name, h.category, h.op_index, h.parent_index, h.dur_ns,
           coalesce(l.device_ns, 0) AS device_self_ns
    FROM host_op h
    LEFT JOIN (SELECT rank, capture, op_index, sum(dur_ns) AS device_ns FROM device_exec
               WHERE op_index IS NOT NULL GROUP BY rank, capture, op_index) l USING (rank, capture, op_index)
), children AS (
    SELECT rank, capture, parent_index AS op_index, sum(dur_ns) AS child_ns
    FROM own WHERE parent_index >= 0
    GROUP BY rank, capture, parent_index
), climb AS (  -- each op's own device time, handed up to every op it is nested in
    SELECT rank, capture, op_index, parent_index, device_self_ns AS device_ns FROM own WHERE device_self_ns > 0
    UNION ALL
    SELECT c.rank, c.capture, p.op_index, p.parent_index, c.device_ns
    FROM climb c JOIN own p ON p.rank = c.rank AND p.capture = c.capture AND p.op_index = c.parent_index
), device_total AS (
    SELECT rank, capture, op_index, sum(device_ns) AS device_total_ns FROM climb GROUP BY rank, capture, op_index
), per_name AS (
    SELECT o.rank, o.op_name, any_value(o.category) AS category, count(*) AS calls,
           sum(o.dur_ns) AS host_total_ns, sum(o.dur_ns - coalesce(c.child_ns, 0)) AS host_self_ns,
           sum(o.device_self_ns) AS device_self_ns, coalesce(sum(t.device_total_ns), 0) AS device_total_ns
    FROM own o
    LEFT JOIN children c USING (rank, capture, op_index)
    LEFT JOIN device_total t USING (rank, capture, op_index)
    GROUP BY o.rank, o.op_name
)
SELECT *, host_self_ns / nullif(sum(host_self_ns) OVER (PARTITION BY rank), 0) AS host_self_share
FROM per_name
