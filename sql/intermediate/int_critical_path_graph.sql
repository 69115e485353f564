-- The critical-path graph of each window (HTA's critical_path_analysis), one row per edge between two nodes of
-- int_critical_path_event (2 ev: an event's start, 2 ev + 1: its end); the rules are in critical_path_edge.yml.
WITH event AS (
    SELECT * FROM {{ ref('int_critical_path_event') }} WHERE source <> 'sync'
), point AS (
    SELECT *, 2 * ev AS node, start_ns AS ts, false AS is_end FROM event
    UNION ALL
    SELECT *, 2 * ev + 1, end_ns, true FROM event
), cpu_walk AS (  -- HTA's depth-first walk of each thread's call stack: its points in nesting order
    SELECT *, coalesce(sum(CASE WHEN is_end THEN -1 ELSE 1 END) OVER (walk ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),
                       0) AS depth_before,
           lag(node) OVER walk AS prev_node, lag(ts) OVER walk AS prev_ts
    FROM point WHERE source IN ('op', 'api')
    WINDOW walk AS (PARTITION BY rank, capture, win, tid ORDER BY ts, is_end DESC,
                    CASE WHEN is_end THEN -start_ns ELSE -(end_ns - start_ns) END, ev)
), kernel AS (
    SELECT *, lag(ev) OVER stream AS prev_ev, lag(end_ns) OVER stream AS prev_end_ns
    FROM event WHERE source IN ('kernel', 'memcpy', 'memset')
    WINDOW stream AS (PARTITION BY rank, capture, win, stream_id ORDER BY start_ns, ev)
), launched AS (  -- each kernel with its launching call's node and HTA's queue lengths at the call and at the kernel
    SELECT k.*, c.ev AS call_ev, c.start_ns AS call_start_ns, qc.queue_length AS queue_at_call,
           qk.queue_length AS queue_at_kernel
    FROM kernel k
    LEFT JOIN event c ON c.rank = k.rank AND c.capture = k.capture AND c.win = k.win
         AND c.source = 'api' AND c.correlation = k.correlation
    LEFT JOIN {{ ref('int_gpu_queue_length') }} qc ON qc.rank = k.rank AND qc.capture = k.capture
         AND qc.stream_id = k.stream_id AND qc.ts_ns = c.start_ns
    LEFT JOIN {{ ref('int_gpu_queue_length') }} qk ON qk.rank = k.rank AND qk.capture = k.capture
         AND qk.stream_id = k.stream_id AND qk.ts_ns = k.start_ns
), sync_call AS (  -- a Stream Sync / Context Sync with its runtime call's end node
    SELECT s.rank, s.capture, s.win, s.name, s.stream_id, s.end_ns, 2 * c.ev + 1 AS call_end_node
    FROM {{ ref('int_critical_path_event') }} s JOIN event c ON c.rank = s.rank AND c.capture = s.capture
         AND c.win = s.win AND c.source = 'api' AND c.correlation = s.correlation
    WHERE s.source = 'sync'
), edge_raw AS (
    -- CPU: consecutive points of a thread's walk; a top-level op's start hangs on the previous top-level end
    SELECT rank, capture, win, prev_node AS src, node AS dst,
           CASE WHEN NOT is_end AND depth_before = 0 THEN 'dependency' ELSE 'cpu_op' END AS edge_type,
           CASE WHEN NOT is_end AND depth_before = 0 THEN 0 WHEN is_end AND blocking THEN 0 ELSE ts - prev_ts END AS weight_ns
    FROM cpu_walk WHERE prev_node IS NOT NULL
    UNION ALL  -- a device activity's own span
    SELECT rank, capture, win, 2 * ev, 2 * ev + 1, 'gpu_op', end_ns - start_ns FROM kernel
    UNION ALL  -- launch delay where the stream was idle at the call, else the gap after the stream's previous activity
    SELECT rank, capture, win,
           CASE WHEN launch THEN 2 * call_ev ELSE 2 * prev_ev + 1 END, 2 * ev,
           CASE WHEN launch THEN 'launch' ELSE 'kernel_kernel' END,
           CASE WHEN launch THEN start_ns - call_start_ns ELSE start_ns - prev_end_ns END
    FROM (SELECT *, coalesce(call_ev IS NOT NULL AND queue_at_call = 1 AND queue_at_kernel = 0
                             AND (prev_ev IS NULL OR prev_end_ns < call_start_ns), false) AS launch FROM launched)
    WHERE launch OR prev_ev IS NOT NULL
    UNION ALL  -- a blocking sync returns after the last activity started before the sync ended, on its stream (Stream
               -- Sync) or on every stream (Context Sync)
    SELECT s.rank, s.capture, s.win, 2 * arg_max(k.ev, k.start_ns) + 1, s.call_end_node, 'sync', 0
    FROM sync_call s JOIN kernel k ON k.rank = s.rank AND k.capture = s.capture AND k.win = s.win
         AND k.start_ns <= s.end_ns AND (s.name = 'Context Sync' OR k.stream_id = s.stream_id)
    GROUP BY s.rank, s.capture, s.win, s.call_end_node, s.name, s.stream_id, s.end_ns, k.stream_id
)
-- one edge per node pair (the last one HTA adds wins: device edges after CPU ones); negative weights count 0
SELECT rank, capture, win, src, dst, arg_max(edge_type, priority) AS edge_type,
       greatest(arg_max(weight_ns, priority), 0) AS weight_ns
FROM (SELECT *, CASE edge_type WHEN 'sync' THEN 3 WHEN 'dependency' THEN 0 WHEN 'cpu_op' THEN 0 ELSE 2 END AS priority
      FROM edge_raw)
WHERE src <> dst
GROUP BY ALL
