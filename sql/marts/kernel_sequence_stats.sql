-- Each op's device work as one sequence, counted over the op's executions: HolisticTraceAnalysis'
-- get_frequent_cuda_kernel_sequences for every op at once. An op execution's sequence is every device activity
-- (kernel, memcpy, memset, sync) launched in it or in the ops nested in it (device_exec.op_index and
-- host_op.parent_index), in start order, joined by '|'. Executions of one op name at one nesting depth with the same
-- sequence make one row; HTA's answer for (operator_name, min_pattern_len) is the rows whose op_name contains
-- operator_name at the least depth any such op has, with activities >= min_pattern_len, by instances descending.
-- A sequence is built and grouped as a list of name numbers; only each row's is spelt out.
WITH RECURSIVE ops AS (
    SELECT rank, capture, op_index, parent_index, op_name, dur_ns FROM {{ ref('stg_host_op') }}
), launched AS (  -- the device work an op launched
    SELECT rank, capture, op_index, kind, name, start_ns, dur_ns, stream_id, correlation
    FROM {{ ref('stg_device_exec') }}
    WHERE op_index IS NOT NULL AND kind IN ('kernel', 'memcpy', 'memset', 'sync')
), name_ids AS (  -- each name's number, in name order
    SELECT name, row_number() OVER (ORDER BY name) AS name_id FROM (SELECT DISTINCT name FROM launched)
), names AS (
    SELECT list(name ORDER BY name_id) AS names FROM name_ids
), activities AS (  -- each activity with its name's number and its place in start order
    SELECT l.rank, l.capture, l.op_index, l.kind, l.dur_ns, n.name_id,
           row_number() OVER (ORDER BY l.start_ns, l.stream_id, l.correlation, n.name_id) AS position
    FROM launched l JOIN name_ids n ON n.name IS NOT DISTINCT FROM l.name
), climb AS (  -- each launching op, handed up to every op it is nested in (hops: how many levels up)
    SELECT o.rank, o.capture, o.op_index AS owner_index, o.op_name, o.dur_ns, o.op_index, o.parent_index, 0 AS hops
    FROM (SELECT DISTINCT rank, capture, op_index FROM activities) a
    JOIN ops o USING (rank, capture, op_index)
    UNION ALL
    SELECT c.rank, c.capture, p.op_index, p.op_name, p.dur_ns, c.op_index, p.parent_index, c.hops + 1
    FROM climb c JOIN ops p ON p.rank = c.rank AND p.capture = c.capture AND p.op_index = c.parent_index
), launcher AS (  -- a launching op's nesting depth on its thread (0 at the top level, or where the source has no
                  -- nesting); an op whose chain of parents does not reach the top level has none
    SELECT rank, capture, op_index, max(hops) AS depth FROM climb GROUP BY ALL
    HAVING bool_or(parent_index IS NULL OR parent_index < 0)
), executions AS (  -- one row per op execution that launched device work
    SELECT c.rank, c.capture, c.owner_index, any_value(c.op_name) AS op_name, any_value(l.depth - c.hops) AS op_depth,
           any_value(c.dur_ns) AS op_ns,
           list(a.name_id ORDER BY a.position) AS sequence_ids,
           count(*) AS activities, count(*) FILTER (WHERE a.kind = 'kernel') AS kernels,
           sum(a.dur_ns) AS device_ns, sum(a.dur_ns) FILTER (WHERE a.kind = 'kernel') AS kernel_ns
    FROM climb c JOIN launcher l USING (rank, capture, op_index) JOIN activities a USING (rank, capture, op_index)
    GROUP BY c.rank, c.capture, c.owner_index
), device_total AS (  -- the rank's device time: every activity of those kinds, launched by an op or not
    SELECT rank, sum(dur_ns) AS rank_device_ns FROM {{ ref('stg_device_exec') }}
    WHERE kind IN ('kernel', 'memcpy', 'memset', 'sync') GROUP BY rank
), grouped AS (
    SELECT rank, op_name, op_depth, sequence_ids, any_value(activities) AS activities,
           any_value(kernels) AS kernels, count(*) AS instances, sum(device_ns)::BIGINT AS device_ns,
           coalesce(sum(kernel_ns), 0)::BIGINT AS kernel_ns, sum(op_ns)::BIGINT AS op_ns
    FROM executions
    GROUP BY rank, op_name, op_depth, sequence_ids
)
SELECT g.rank, g.op_name, g.op_depth, array_to_string(list_transform(g.sequence_ids, lambda i: n.names[i]), '|') AS sequence,
       g.activities, g.kernels, g.instances, g.device_ns, g.kernel_ns, g.op_ns, g.device_ns / g.instances AS avg_device_ns,
       g.device_ns / nullif(t.rank_device_ns, 0) AS device_share
FROM grouped g JOIN device_total t USING (rank) CROSS JOIN names n
