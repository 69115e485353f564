-- The critical-path graph of each window (HTA's critical_path_analysis), one row per edge between two nodes of
-- int_critical_path_event (2 ev: an event's start, 2 ev + 1: its end); the rules are in critical_path_edge.yml.
WITH event AS (  -- what the graph needs of the events with nodes (not their names)
    SELECT rank, capture, win, ev, source, tid, stream_id, start_ns, end_ns, correlation, blocking
    FROM {{ ref('int_critical_path_event') }} WHERE source <> 'sync'
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
), launch AS (  -- every launching call of an activity in the trace (not only the window's)
    SELECT rank, capture, stream_id, tid, call_start_ns, correlation FROM {{ ref('int_launched_activity') }}
    WHERE kind IN ('kernel', 'memcpy', 'memset') AND call_start_ns IS NOT NULL
), recorded AS (  -- each cudaEventRecord a sync waits on: the activity launched last on its stream before it
    SELECT r.rank, r.capture, r.wait_correlation, l.correlation AS activity_correlation
    FROM (SELECT DISTINCT s.rank, s.capture, s.wait_correlation, s.wait_stream_id, c.start_ns AS record_ns
          FROM {{ ref('int_critical_path_event') }} s
          JOIN {{ ref('stg_host_api') }} c ON c.rank = s.rank AND c.capture = s.capture AND c.correlation = s.wait_correlation
          WHERE s.source = 'sync' AND s.wait_correlation IS NOT NULL AND s.wait_stream_id IS NOT NULL) r
    ASOF JOIN launch l ON l.rank = r.rank AND l.capture = r.capture AND l.stream_id = r.wait_stream_id
         AND l.call_start_ns <= r.record_ns
), event_sync AS (  -- an Event Sync / Stream Wait Event with its call and the window's node of the activity it waits for
    SELECT s.rank, s.capture, s.win, s.name, s.stream_id, s.end_ns, c.ev AS call_ev, c.tid AS call_tid,
           c.start_ns AS call_start_ns, k.ev AS waited_ev, k.end_ns AS waited_end_ns
    FROM {{ ref('int_critical_path_event') }} s
    JOIN recorded r ON r.rank = s.rank AND r.capture = s.capture AND r.wait_correlation = s.wait_correlation
    JOIN event c ON c.rank = s.rank AND c.capture = s.capture AND c.win = s.win AND c.source = 'api'
         AND c.correlation = s.correlation
    JOIN event k ON k.rank = s.rank AND k.capture = s.capture AND k.win = s.win
         AND k.source IN ('kernel', 'memcpy', 'memset') AND k.correlation = r.activity_correlation
    WHERE s.source = 'sync' AND s.name IN ('Event Sync', 'Stream Wait Event')
), stream_wait AS (  -- a Stream Wait Event holds the next activity its thread launches on the waiting stream
    SELECT w.rank, w.capture, w.win, l.correlation, arg_max(w.waited_ev, w.end_ns) AS waited_ev,
           arg_max(w.waited_end_ns, w.end_ns) AS waited_end_ns
    FROM event_sync w
    ASOF JOIN launch l ON l.rank = w.rank AND l.capture = w.capture AND l.tid = w.call_tid
         AND l.stream_id = w.stream_id AND l.call_start_ns >= w.call_start_ns
    WHERE w.name = 'Stream Wait Event'
    GROUP BY ALL
), launched AS (  -- each kernel with its launching call's node, HTA's queue lengths at the call and at the kernel,
                  -- and the activity a Stream Wait Event makes it wait for
    SELECT k.*, c.ev AS call_ev, c.start_ns AS call_start_ns, qc.queue_length AS queue_at_call,
           qk.queue_length AS queue_at_kernel, sw.waited_ev, sw.waited_end_ns
    FROM kernel k
    LEFT JOIN stream_wait sw ON sw.rank = k.rank AND sw.capture = k.capture AND sw.win = k.win
         AND sw.correlation = k.correlation
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
    WHERE s.source = 'sync' AND s.name IN ('Stream Sync', 'Context Sync')
), cpu_edge AS (  -- consecutive points of a thread's walk; a top-level op's start hangs on the previous top-level end
    SELECT rank, capture, win, prev_node AS src, node AS dst,
           CASE WHEN NOT is_end AND depth_before = 0 THEN 'dependency' ELSE 'cpu_op' END AS edge_type,
           CASE WHEN NOT is_end AND depth_before = 0 THEN 0 WHEN is_end AND blocking THEN 0 ELSE ts - prev_ts END AS weight_ns
    FROM cpu_walk WHERE prev_node IS NOT NULL
), device_edge AS (  -- the edges that end or start at a device activity
    -- a device activity's own span
    SELECT rank, capture, win, 2 * ev AS src, 2 * ev + 1 AS dst, 'gpu_op' AS edge_type, end_ns - start_ns AS weight_ns
    FROM kernel
    UNION ALL  -- launch delay where the stream was idle at the call (and a waited-for activity had ended), else the
               -- gap after the stream's previous activity (where that ended after a waited-for one)
    SELECT rank, capture, win,
           CASE WHEN launch THEN 2 * call_ev ELSE 2 * prev_ev + 1 END, 2 * ev,
           CASE WHEN launch THEN 'launch' ELSE 'kernel_kernel' END,
           CASE WHEN launch THEN start_ns - call_start_ns ELSE start_ns - prev_end_ns END
    FROM (SELECT *, coalesce(call_ev IS NOT NULL AND queue_at_call = 1 AND queue_at_kernel = 0
                             AND (prev_ev IS NULL OR prev_end_ns < call_start_ns)
                             AND (waited_ev IS NULL OR waited_end_ns < call_start_ns), false) AS launch FROM launched)
    WHERE launch OR (prev_ev IS NOT NULL AND (waited_ev IS NULL OR waited_end_ns < prev_end_ns))
    UNION ALL  -- a Stream Wait Event: the activity waited for holds the next one launched on the waiting stream
    SELECT rank, capture, win, 2 * waited_ev + 1, 2 * ev, 'sync', 0 FROM launched WHERE waited_ev IS NOT NULL
    UNION ALL  -- an Event Sync (cudaEventSynchronize, cudaEventQuery) returns after the activity its event waits for
    SELECT rank, capture, win, 2 * waited_ev + 1, 2 * call_ev + 1, 'sync', 0 FROM event_sync WHERE name = 'Event Sync'
    UNION ALL  -- a blocking sync returns after the last activity started before the sync ended, on its stream (Stream
               -- Sync) or on every stream (Context Sync)
    SELECT s.rank, s.capture, s.win, 2 * arg_max(k.ev, k.start_ns) + 1, s.call_end_node, 'sync', 0
    FROM sync_call s JOIN kernel k ON k.rank = s.rank AND k.capture = s.capture AND k.win = s.win
         AND k.start_ns <= s.end_ns AND (s.name = 'Context Sync' OR k.stream_id = s.stream_id)
    GROUP BY s.rank, s.capture, s.win, s.call_end_node, s.name, s.stream_id, s.end_ns, k.stream_id
)
-- every CPU edge (each point has one predecessor on its thread, and no device edge joins two CPU points), and one
-- device edge per node pair (the last one HTA adds wins: sync edges after the others); negative weights count 0
SELECT rank, capture, win, src, dst, edge_type, greatest(weight_ns, 0) AS weight_ns FROM cpu_edge
UNION ALL
SELECT rank, capture, win, src, dst, arg_max(edge_type, priority) AS edge_type,
       greatest(arg_max(weight_ns, priority), 0) AS weight_ns
FROM (SELECT *, CASE edge_type WHEN 'sync' THEN 1 ELSE 0 END AS priority FROM device_edge)
WHERE src <> dst
GROUP BY ALL
