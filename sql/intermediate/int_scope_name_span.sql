WITH run AS (
    SELECT rank, capture FROM {{ ref('int_scope_run') }} WHERE algorithm = 'scope_name'
), communication AS (  -- MindSpore leaves communication ops out: the ops of the step trace's communication points
    SELECT DISTINCT rank, capture, op_short_name(op_name) AS short_name
    FROM {{ ref('stg_step_point') }}
    WHERE kind IN ('comm_start', 'comm_end') AND op_name IS NOT NULL
), left_out_task AS (  -- ... and (Ascend) AI CPU and HCCL tasks, where the task descriptions give the type
    SELECT DISTINCT rank, op_name FROM {{ ref('stg_task_desc') }} WHERE task_type IN ('AI_CPU', 'HCCL')
), op AS (  -- MindSpore's op list: the ops timed by the framework (CPU ops, GPU ops) and the Ascend op tasks
    SELECT o.rank, o.capture, CASE o.side WHEN 'Host' THEN 1 ELSE 0 END AS source, o.op_name AS name, o.start_ns,
           o.end_ns
    FROM {{ ref('stg_host_op') }} o SEMI JOIN run r ON r.rank = o.rank AND r.capture = o.capture
    WHERE o.category IS NULL
    UNION ALL
    SELECT e.rank, e.capture, 0, e.name, e.start_ns, e.end_ns
    FROM {{ ref('int_device_exec') }} e SEMI JOIN run r ON r.rank = e.rank AND r.capture = e.capture
    WHERE e.kind = 'task'
), listed AS (  -- in start order (ties: device ops before host ops, as MindSpore appends the host ops)
    SELECT op.*, row_number() OVER (PARTITION BY op.rank, op.capture ORDER BY op.start_ns, op.source, op.name) AS idx,
           string_split(op.name, '/') AS parts
    FROM op
    ANTI JOIN communication c ON c.rank = op.rank AND c.capture = op.capture AND c.short_name = op_short_name(op.name)
    ANTI JOIN left_out_task t ON t.rank = op.rank AND t.op_name = op.name
), step_start AS (  -- the step's first op: the capture's first, or its second when that is Default/InitDataSetQueue
    SELECT l.rank, l.capture, l.name, b.start_idx, b.ops
    FROM (SELECT rank, capture, count(*) AS ops,
                 CASE WHEN starts_with(arg_min(name, idx), 'Default/InitDataSetQueue') AND count(*) > 1 THEN 2
                      ELSE 1 END AS start_idx
          FROM listed GROUP BY rank, capture) b
    JOIN listed l ON l.rank = b.rank AND l.capture = b.capture AND l.idx = b.start_idx
), step_end AS (  -- the step's last op: the one before the first op comes again (the last op if it never does)
    SELECT l.rank, l.capture, l.name
    FROM (SELECT s.rank, s.capture,
                 coalesce(min(l.idx) FILTER (WHERE l.idx > s.start_idx AND l.name = s.name), s.ops + 1) - 1 AS idx
          FROM step_start s JOIN listed l ON l.rank = s.rank AND l.capture = s.capture
          GROUP BY s.rank, s.capture, s.start_idx, s.ops) e
    JOIN listed l ON l.rank = e.rank AND l.capture = e.capture AND l.idx = e.idx
), level AS (  -- one row per op and level of its scope path (every '/'-segment but the last), under a subgraph only
    SELECT rank, capture, idx, start_ns, end_ns, ends_step, parts[1] AS subgraph, level - 1 AS depth,
           parts[level] AS scope
    FROM (SELECT l.*, l.name = e.name AS ends_step, unnest(range(1, len(l.parts))) AS level
          FROM listed l JOIN step_end e ON e.rank = l.rank AND e.capture = l.capture
          WHERE l.parts[1] IN ('Default', 'Gradients', 'recompute_Default')
            AND NOT starts_with(l.name, 'Default/InitDataSetQueue'))
), opened AS (  -- a span runs over consecutive ops of the list (the previous op at its level is the list's
                 -- previous op and has the same subgraph and segment there); it also ends with the step's last op
    SELECT *, coalesce(lag(idx) OVER w <> idx - 1 OR lag(subgraph) OVER w <> subgraph OR lag(scope) OVER w <> scope
                       OR lag(ends_step) OVER w, TRUE) AS opens
    FROM level
    WINDOW w AS (PARTITION BY rank, capture, depth ORDER BY idx)
), numbered AS (
    SELECT *, sum(opens::INTEGER) OVER (PARTITION BY rank, capture, depth ORDER BY idx) AS span
    FROM opened
)
SELECT rank, capture, depth::INTEGER AS depth, any_value(scope) AS scope, min(start_ns) AS start_ns,
       arg_max(end_ns, idx) - min(start_ns) AS dur_ns, count(*) AS ops, min(idx) AS first_op, max(idx) AS last_op
FROM numbered
GROUP BY rank, capture, depth, span
