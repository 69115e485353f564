-- The events of each critical-path window (HTA's critical_path_analysis): the window's cpu_op host ops and
-- runtime / driver calls, the kernels, memcpy and memset those calls launched, numbered in start order (ev; an event
-- gives the graph nodes 2 ev, its start, and 2 ev + 1, its end), and the syncs the device recorded (no nodes: a
-- Stream / Context Sync ties a stream's last activity to its call's end, an Event Sync the activity its CUDA event
-- waits for to its call's end, a Stream Wait Event that activity to the next one launched on the waiting stream). Windows: each step of int_step; a capture without steps, whole.
WITH stepped AS (
    SELECT DISTINCT rank, capture FROM {{ ref('int_step') }}
), windows AS (
    SELECT rank, capture, step, start_ns AS win_start, end_ns AS win_end
    FROM {{ ref('int_step') }} WHERE end_ns > start_ns
    UNION ALL
    SELECT s.rank, s.capture, NULL::BIGINT, min(s.start_ns), max(s.start_ns + s.dur_ns)
    FROM (SELECT rank, capture, start_ns, dur_ns FROM {{ ref('stg_host_op') }}
          UNION ALL SELECT rank, capture, start_ns, dur_ns FROM {{ ref('stg_host_api') }}) s
    ANTI JOIN stepped USING (rank, capture)
    GROUP BY s.rank, s.capture
), cpu_event AS (  -- HTA's CPU nodes: cpu_op and runtime / driver calls of positive duration starting in the window
    SELECT w.rank, w.capture, w.step, 'op' AS source, o.tid, NULL::BIGINT AS stream_id, o.op_name AS name, o.start_ns,
           o.start_ns + o.dur_ns AS end_ns, NULL::BIGINT AS correlation, false AS blocking,
           NULL::BIGINT AS wait_stream_id, NULL::BIGINT AS wait_correlation
    FROM windows w JOIN {{ ref('stg_host_op') }} o
      ON o.rank = w.rank AND o.capture = w.capture AND o.start_ns BETWEEN w.win_start AND w.win_end
    WHERE o.category = 'cpu_op' AND o.dur_ns > 0
    UNION ALL
    SELECT w.rank, w.capture, w.step, 'api', a.tid, NULL, a.name, a.start_ns, a.start_ns + a.dur_ns, a.correlation,
           a.name IN ('cudaDeviceSynchronize', 'cudaStreamSynchronize', 'cudaEventQuery', 'cudaEventSynchronize',
                      'cudaMemcpy', 'cudaMemcpyAsync'), NULL, NULL
    FROM windows w JOIN {{ ref('stg_host_api') }} a
      ON a.rank = w.rank AND a.capture = w.capture AND a.start_ns BETWEEN w.win_start AND w.win_end
    WHERE a.dur_ns > 0
), gpu_event AS (  -- kernels, memcpy, memset and the syncs whose launching call is a node of the window
    SELECT w.rank, w.capture, w.step, l.kind AS source, l.tid, l.stream_id, l.name, l.start_ns,
           l.start_ns + l.dur_ns AS end_ns, l.correlation, false AS blocking, l.wait_stream_id, l.wait_correlation
    FROM windows w JOIN {{ ref('int_launched_activity') }} l
      ON l.rank = w.rank AND l.capture = w.capture AND l.call_start_ns BETWEEN w.win_start AND w.win_end
    WHERE l.call_dur_ns > 0 AND (l.kind <> 'sync' OR l.name IN ('Stream Sync', 'Context Sync', 'Event Sync', 'Stream Wait Event'))
), event AS (
    SELECT * FROM cpu_event UNION ALL SELECT * FROM gpu_event
)
SELECT rank, capture, step, coalesce(step, -1) AS win,
       CASE WHEN source <> 'sync' THEN row_number() OVER (
           PARTITION BY rank, capture, step, source = 'sync'
           ORDER BY start_ns, end_ns DESC, source, tid, stream_id, correlation, name) END AS ev,
       source, tid, stream_id, name, start_ns, end_ns, correlation, blocking, wait_stream_id, wait_correlation
FROM event
