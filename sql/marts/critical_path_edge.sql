-- HTA's critical path (critical_path_analysis) per rank and window, edge by edge: the longest path of
-- int_critical_path with the events its two nodes belong to.
WITH point AS (
    SELECT rank, capture, win, step, ev, source, name, tid, stream_id, start_ns, end_ns
    FROM {{ ref('int_critical_path_event') }} WHERE ev IS NOT NULL
), with_points AS (
    SELECT p.rank, p.capture, p.win, s.step, p.edge_index, p.edge_type, p.weight_ns,
           s.source AS from_source, s.name AS from_name, p.src % 2 = 1 AS from_end,
           CASE WHEN p.src % 2 = 1 THEN s.end_ns ELSE s.start_ns END AS from_ns,
           t.source AS to_source, t.name AS to_name, p.dst % 2 = 1 AS to_end,
           CASE WHEN p.dst % 2 = 1 THEN t.end_ns ELSE t.start_ns END AS to_ns,
           coalesce(s.tid, t.tid) AS tid, coalesce(t.stream_id, s.stream_id) AS stream_id
    FROM {{ ref('int_critical_path') }} p
    JOIN point s ON s.rank = p.rank AND s.capture = p.capture AND s.win = p.win AND s.ev = p.src // 2
    JOIN point t ON t.rank = p.rank AND t.capture = p.capture AND t.win = p.win AND t.ev = p.dst // 2
), enclosing AS (  -- an end to a later start on one thread: the smallest op or call holding both
    SELECT w.rank, w.capture, w.win, w.edge_index, arg_min(c.name, c.end_ns - c.start_ns) AS name
    FROM with_points w JOIN point c ON c.rank = w.rank AND c.capture = w.capture AND c.win = w.win AND c.tid = w.tid
         AND c.source IN ('op', 'api') AND c.start_ns <= w.from_ns AND c.end_ns >= w.to_ns
    WHERE w.edge_type = 'cpu_op' AND w.from_end AND NOT w.to_end
    GROUP BY ALL
)
-- the event an op / activity edge's time belongs to (HTA's attribution): the start's event, else the end's, else
-- (an end to a later start on one thread) the op enclosing both
SELECT w.rank, w.capture, w.step, w.edge_index, w.edge_type, w.weight_ns,
       w.from_source, w.from_name, CASE WHEN w.from_end THEN 'end' ELSE 'start' END AS from_point, w.from_ns,
       w.to_source, w.to_name, CASE WHEN w.to_end THEN 'end' ELSE 'start' END AS to_point, w.to_ns,
       w.tid, w.stream_id,
       CASE WHEN w.edge_type = 'kernel_kernel' THEN w.from_name
            WHEN w.edge_type NOT IN ('cpu_op', 'gpu_op') THEN NULL
            WHEN NOT w.from_end THEN w.from_name WHEN w.to_end THEN w.to_name
            ELSE e.name END AS event_name,
       CASE w.edge_type WHEN 'kernel_kernel' THEN 'gpu_kernel_kernel_overhead' WHEN 'launch' THEN 'gpu_kernel_launch_overhead'
            WHEN 'cpu_op' THEN 'cpu_bound'
            WHEN 'gpu_op' THEN CASE WHEN regexp_matches(lower(w.to_name), 'nccl|rccl') THEN 'gpu_communication_bound'
                                    ELSE 'gpu_compute_bound' END END AS bound_by
FROM with_points w LEFT JOIN enclosing e USING (rank, capture, win, edge_index)
