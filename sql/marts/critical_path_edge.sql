-- HTA's critical path (critical_path_analysis) per rank and window: the graph of a window's op, runtime-call and
-- device-activity start and end points, with HTA's edges and weights, and the longest path through it, edge by edge.
-- Windows: the whole capture (step NULL, HTA's annotation ""), and each step of int_step.
WITH RECURSIVE windows AS (
    SELECT rank, capture, NULL::BIGINT AS step, min(start_ns) AS win_start, max(start_ns + dur_ns) AS win_end
    FROM (SELECT rank, capture, start_ns, dur_ns FROM {{ ref('stg_host_op') }}
          UNION ALL SELECT rank, capture, start_ns, dur_ns FROM {{ ref('stg_host_api') }})
    GROUP BY rank, capture
    UNION ALL
    SELECT rank, capture, step, start_ns, end_ns FROM {{ ref('int_step') }} WHERE end_ns > start_ns
), cpu_event AS (  -- HTA's CPU nodes: cpu_op and runtime / driver calls of positive duration starting in the window
    SELECT w.rank, w.capture, w.step, 'op' AS source, o.tid, o.op_name AS name, o.start_ns, o.start_ns + o.dur_ns AS end_ns,
           NULL::BIGINT AS correlation, false AS blocking
    FROM windows w JOIN {{ ref('stg_host_op') }} o
      ON o.rank = w.rank AND o.capture = w.capture AND o.start_ns BETWEEN w.win_start AND w.win_end
    WHERE o.category = 'cpu_op' AND o.dur_ns > 0
    UNION ALL
    SELECT w.rank, w.capture, w.step, 'api', a.tid, a.name, a.start_ns, a.start_ns + a.dur_ns, a.correlation,
           a.name IN ('cudaDeviceSynchronize', 'cudaStreamSynchronize', 'cudaEventQuery', 'cudaEventSynchronize',
                      'cudaMemcpy', 'cudaMemcpyAsync')
    FROM windows w JOIN {{ ref('stg_host_api') }} a
      ON a.rank = w.rank AND a.capture = w.capture AND a.start_ns BETWEEN w.win_start AND w.win_end
    WHERE a.dur_ns > 0
), gpu_event AS (  -- kernels, memcpy, memset (and the syncs) whose launching call is a node of the window
    SELECT w.rank, w.capture, w.step, l.kind, l.stream_id, l.name, l.start_ns, l.start_ns + l.dur_ns AS end_ns,
           l.correlation, l.tid, l.call_start_ns, l.call_start_ns + l.call_dur_ns AS call_end_ns
    FROM windows w JOIN {{ ref('int_launched_activity') }} l
      ON l.rank = w.rank AND l.capture = w.capture AND l.call_start_ns BETWEEN w.win_start AND w.win_end
    WHERE l.call_dur_ns > 0 AND (l.kind <> 'sync' OR l.name IN ('Stream Sync', 'Context Sync'))
), event AS (
    SELECT rank, capture, step, source, tid, NULL::BIGINT AS stream_id, name, start_ns, end_ns, correlation, blocking
    FROM cpu_event
    UNION ALL
    SELECT rank, capture, step, kind, NULL, stream_id, name, start_ns, end_ns, correlation, false
    FROM gpu_event WHERE kind <> 'sync'
), numbered AS (
    SELECT *, row_number() OVER (PARTITION BY rank, capture, step ORDER BY start_ns, end_ns DESC, source, tid, stream_id,
                                 correlation, name) AS ev
    FROM event
), point AS (  -- a node: the start (2 ev) or end (2 ev + 1) of an event
    SELECT *, 2 * ev AS node, start_ns AS ts, false AS is_end FROM numbered
    UNION ALL
    SELECT *, 2 * ev + 1, end_ns, true FROM numbered
), cpu_walk AS (  -- HTA's depth-first walk of each thread's call stack: its points in nesting order
    SELECT *, coalesce(sum(CASE WHEN is_end THEN -1 ELSE 1 END) OVER (
               PARTITION BY rank, capture, step, tid ORDER BY ts, is_end DESC,
                            CASE WHEN is_end THEN -start_ns ELSE -(end_ns - start_ns) END, ev
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS depth_before,
           lag(node) OVER (PARTITION BY rank, capture, step, tid ORDER BY ts, is_end DESC,
                           CASE WHEN is_end THEN -start_ns ELSE -(end_ns - start_ns) END, ev) AS prev_node,
           lag(ts) OVER (PARTITION BY rank, capture, step, tid ORDER BY ts, is_end DESC,
                         CASE WHEN is_end THEN -start_ns ELSE -(end_ns - start_ns) END, ev) AS prev_ts
    FROM point WHERE source IN ('op', 'api')
), kernel AS (
    SELECT n.*, lag(ev) OVER (PARTITION BY rank, capture, step, stream_id ORDER BY start_ns, ev) AS prev_ev,
           lag(end_ns) OVER (PARTITION BY rank, capture, step, stream_id ORDER BY start_ns, ev) AS prev_end_ns
    FROM numbered n WHERE source IN ('kernel', 'memcpy', 'memset')
), queue AS (
    SELECT rank, capture, stream_id, ts_ns, queue_length FROM {{ ref('gpu_queue_length') }}
), launched AS (  -- each kernel with its launching call's node and HTA's queue lengths at the call and at the kernel
    SELECT k.*, c.ev AS call_ev, c.start_ns AS call_start_ns, qc.queue_length AS queue_at_call,
           qk.queue_length AS queue_at_kernel
    FROM kernel k
    LEFT JOIN numbered c ON c.rank = k.rank AND c.capture = k.capture AND c.step IS NOT DISTINCT FROM k.step
         AND c.source = 'api' AND c.correlation = k.correlation
    LEFT JOIN queue qc ON qc.rank = k.rank AND qc.capture = k.capture AND qc.stream_id = k.stream_id
         AND qc.ts_ns = c.start_ns
    LEFT JOIN queue qk ON qk.rank = k.rank AND qk.capture = k.capture AND qk.stream_id = k.stream_id
         AND qk.ts_ns = k.start_ns
), sync_call AS (  -- a Stream Sync / Context Sync with its runtime call's end node
    SELECT g.rank, g.capture, g.step, g.name, g.stream_id, g.end_ns, 2 * c.ev + 1 AS call_end_node
    FROM gpu_event g JOIN numbered c ON c.rank = g.rank AND c.capture = g.capture
         AND c.step IS NOT DISTINCT FROM g.step AND c.source = 'api' AND c.correlation = g.correlation
    WHERE g.kind = 'sync'
), edge_raw AS (
    -- CPU: consecutive points of a thread's walk; a top-level op's start hangs on the previous top-level end
    SELECT rank, capture, step, prev_node AS src, node AS dst,
           CASE WHEN NOT is_end AND depth_before = 0 THEN 'dependency' ELSE 'cpu_op' END AS edge_type,
           CASE WHEN NOT is_end AND depth_before = 0 THEN 0 WHEN is_end AND blocking THEN 0 ELSE ts - prev_ts END AS weight_ns
    FROM cpu_walk WHERE prev_node IS NOT NULL
    UNION ALL  -- a device activity's own span
    SELECT rank, capture, step, 2 * ev, 2 * ev + 1, 'gpu_op', end_ns - start_ns FROM kernel
    UNION ALL  -- launch delay where the stream was idle at the call, else the gap after the stream's previous activity
    SELECT rank, capture, step,
           CASE WHEN launch THEN 2 * call_ev ELSE 2 * prev_ev + 1 END, 2 * ev,
           CASE WHEN launch THEN 'launch' ELSE 'kernel_kernel' END,
           CASE WHEN launch THEN start_ns - call_start_ns ELSE start_ns - prev_end_ns END
    FROM (SELECT *, coalesce(call_ev IS NOT NULL AND queue_at_call = 1 AND queue_at_kernel = 0
                             AND (prev_ev IS NULL OR prev_end_ns < call_start_ns), false) AS launch FROM launched)
    WHERE launch OR prev_ev IS NOT NULL
    UNION ALL  -- a blocking sync returns after the last activity started before the sync ended, on its stream (Stream
               -- Sync) or on every stream (Context Sync)
    SELECT s.rank, s.capture, s.step, 2 * arg_max(k.ev, k.start_ns) + 1, s.call_end_node, 'sync', 0
    FROM sync_call s JOIN kernel k ON k.rank = s.rank AND k.capture = s.capture AND k.step IS NOT DISTINCT FROM s.step
         AND k.start_ns <= s.end_ns AND (s.name = 'Context Sync' OR k.stream_id = s.stream_id)
    GROUP BY s.rank, s.capture, s.step, s.call_end_node, s.name, s.stream_id, s.end_ns, k.stream_id
), edge AS (  -- one edge per node pair (the last one HTA adds wins: device edges after CPU ones); negative weights 0
    SELECT rank, capture, coalesce(step, -1) AS win, src, dst, arg_max(edge_type, priority) AS edge_type,
           greatest(arg_max(weight_ns, priority), 0) AS weight_ns
    FROM (SELECT *, CASE edge_type WHEN 'sync' THEN 3 WHEN 'dependency' THEN 0 WHEN 'cpu_op' THEN 0 ELSE 2 END AS priority
          FROM edge_raw)
    WHERE src <> dst
    GROUP BY ALL
), dist(rank, capture, win, node, d, pred, hops) USING KEY (rank, capture, win, node) AS (
    SELECT rank, capture, coalesce(step, -1), node, 0::BIGINT, NULL::BIGINT, 0 FROM point
    UNION
    SELECT e.rank, e.capture, e.win, e.dst, max(f.d + e.weight_ns), arg_max(e.src, f.d + e.weight_ns), max(f.hops) + 1
    FROM dist f
    JOIN edge e ON e.rank = f.rank AND e.capture = f.capture AND e.win = f.win AND e.src = f.node
    JOIN recurring.dist r ON r.rank = e.rank AND r.capture = e.capture AND r.win = e.win AND r.node = e.dst
    WHERE f.hops < 10000000
    GROUP BY e.rank, e.capture, e.win, e.dst
    HAVING max(f.d + e.weight_ns) > any_value(r.d)
), last_node AS (
    SELECT rank, capture, win, arg_max(node, (d, -node)) AS node FROM dist GROUP BY ALL
), path(rank, capture, win, node, pred, position) AS (
    SELECT l.rank, l.capture, l.win, l.node, d.pred, 0
    FROM last_node l JOIN dist d USING (rank, capture, win, node)
    UNION ALL
    SELECT p.rank, p.capture, p.win, d.node, d.pred, p.position + 1
    FROM path p JOIN dist d ON d.rank = p.rank AND d.capture = p.capture AND d.win = p.win AND d.node = p.pred
), path_edge AS (
    SELECT p.rank, p.capture, p.win, p.pred AS src, p.node AS dst,
           row_number() OVER (PARTITION BY p.rank, p.capture, p.win ORDER BY p.position DESC) - 1 AS edge_index
    FROM path p WHERE p.pred IS NOT NULL
), with_points AS (
    SELECT pe.rank, pe.capture, nullif(pe.win, -1) AS step, pe.edge_index, e.edge_type, e.weight_ns,
           s.source AS from_source, s.name AS from_name, s.is_end AS from_end, s.ts AS from_ns,
           t.source AS to_source, t.name AS to_name, t.is_end AS to_end, t.ts AS to_ns,
           coalesce(s.tid, t.tid) AS tid, coalesce(t.stream_id, s.stream_id) AS stream_id
    FROM path_edge pe
    JOIN edge e ON e.rank = pe.rank AND e.capture = pe.capture AND e.win = pe.win AND e.src = pe.src AND e.dst = pe.dst
    JOIN point s ON s.rank = pe.rank AND s.capture = pe.capture AND coalesce(s.step, -1) = pe.win AND s.node = pe.src
    JOIN point t ON t.rank = pe.rank AND t.capture = pe.capture AND coalesce(t.step, -1) = pe.win AND t.node = pe.dst
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
            ELSE (SELECT arg_min(c.name, c.end_ns - c.start_ns) FROM cpu_event c
                  WHERE c.rank = w.rank AND c.capture = w.capture AND c.step IS NOT DISTINCT FROM w.step
                    AND c.tid = w.tid AND c.start_ns <= w.from_ns AND c.end_ns >= w.to_ns) END AS event_name,
       CASE w.edge_type WHEN 'kernel_kernel' THEN 'gpu_kernel_kernel_overhead' WHEN 'launch' THEN 'gpu_kernel_launch_overhead'
            WHEN 'cpu_op' THEN 'cpu_bound'
            WHEN 'gpu_op' THEN CASE WHEN regexp_matches(lower(w.to_name), 'nccl|rccl') THEN 'gpu_communication_bound'
                                    ELSE 'gpu_compute_bound' END END AS bound_by
FROM with_points w
