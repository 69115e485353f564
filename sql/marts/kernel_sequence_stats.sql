-- Each op's device work as one sequence, counted over the op's executions: HolisticTraceAnalysis'
-- get_frequent_cuda_kernel_sequences for every op at once. An op execution's sequence is every device activity
-- (kernel, memcpy, memset, sync) launched in it or in the ops nested in it (device_exec.op_index and
-- host_op.parent_index), in start order, joined by '|'. Executions of one op name at one nesting depth with the same
-- sequence make one row; HTA's answer for (operator_name, min_pattern_len) is the rows whose op_name contains
-- operator_name at the least depth any such op has, with activities >= min_pattern_len, by instances descending.
-- A sequence is built and grouped as a list of name numbers; only each row's is spelt out.
WITH RECURSIVE ops AS (
    SELECT rank, capture, op_index, parent_index, op_name, dur_ns FROM {{ ref('stg_host_op') }}
), depths AS (  -- an op's nesting depth on its thread: 0 at the top level (or where the source has no nesting)
    SELECT rank, capture, op_index, 0 AS depth FROM ops WHERE parent_index IS NULL OR parent_index < 0
    UNION ALL
    SELECT o.rank, o.capture, o.op_index, d.depth + 1
    FROM depths d JOIN ops o ON o.rank = d.rank AND o.capture = d.capture AND o.parent_index = d.op_index
), activities AS (
    SELECT rank, capture, op_index, kind, name, start_ns, dur_ns, stream_id, correlation,
           dense_rank() OVER (ORDER BY name) AS name_id
    FROM {{ ref('stg_device_exec') }}
    WHERE op_index IS NOT NULL AND kind IN ('kernel', 'memcpy', 'memset', 'sync')
), names AS (  -- the names by number
    SELECT list(name ORDER BY name_id) AS names FROM (SELECT DISTINCT name_id, name FROM activities)
), climb AS (  -- each activity, handed up to its op and every op that op is nested in
    SELECT a.rank, a.capture, a.op_index AS owner_index, a.op_index, o.parent_index
    FROM (SELECT DISTINCT rank, capture, op_index FROM activities) a
    JOIN ops o USING (rank, capture, op_index)
    UNION ALL
    SELECT c.rank, c.capture, p.op_index AS owner_index, c.op_index, p.parent_index
    FROM climb c JOIN ops p ON p.rank = c.rank AND p.capture = c.capture AND p.op_index = c.parent_index
), executions AS (  -- one row per op execution that launched device work
    SELECT c.rank, c.capture, c.owner_index,
           list(a.name_id ORDER BY a.start_ns, a.stream_id, a.correlation, a.name) AS sequence_ids,
           count(*) AS activities, count(*) FILTER (WHERE a.kind = 'kernel') AS kernels,
           sum(a.dur_ns) AS device_ns, sum(a.dur_ns) FILTER (WHERE a.kind = 'kernel') AS kernel_ns
    FROM climb c JOIN activities a USING (rank, capture, op_index)
    GROUP BY c.rank, c.capture, c.owner_index
), device_total AS (  -- the rank's device time: every activity of those kinds, launched by an op or not
    SELECT rank, sum(dur_ns) AS rank_device_ns FROM {{ ref('stg_device_exec') }}
    WHERE kind IN ('kernel', 'memcpy', 'memset', 'sync') GROUP BY rank
), grouped AS (
    SELECT e.rank, o.op_name, d.depth AS op_depth, e.sequence_ids, any_value(e.activities) AS activities,
           any_value(e.kernels) AS kernels, count(*) AS instances, sum(e.device_ns)::BIGINT AS device_ns,
           coalesce(sum(e.kernel_ns), 0)::BIGINT AS kernel_ns, sum(o.dur_ns)::BIGINT AS op_ns
    FROM executions e
    JOIN ops o ON o.rank = e.rank AND o.capture = e.capture AND o.op_index = e.owner_index
    JOIN depths d ON d.rank = e.rank AND d.capture = e.capture AND d.op_index = e.owner_index
    GROUP BY e.rank, o.op_name, d.depth, e.sequence_ids
)
SELECT g.rank, g.op_name, g.op_depth, array_to_string(list_transform(g.sequence_ids, lambda i: n.names[i]), '|') AS sequence,
       g.activities, g.kernels, g.instances, g.device_ns, g.kernel_ns, g.op_ns, g.device_ns / g.instances AS avg_device_ns,
       g.device_ns / nullif(t.rank_device_ns, 0) AS device_share
FROM grouped g JOIN device_total t USING (rank) CROSS JOIN names n
