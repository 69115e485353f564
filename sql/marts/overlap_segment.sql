WITH steps AS (  -- each step's window on the device (int_step_device_window): a host step's GPU window, where the GPU
                 -- ran its work; a device-side step trace's own window
    SELECT w.rank, w.capture, w.step, w.start_ns, w.end_ns
    FROM {{ ref('int_step_device_window') }} w JOIN {{ ref('step_phases') }} p USING (rank, capture, step)
    WHERE (w.rank, w.capture) IN (SELECT DISTINCT (rank, capture) FROM {{ ref('int_device_exec') }}) AND w.end_ns > w.start_ns
), communication AS (
    SELECT rank, capture, op_name, start_ns, end_ns FROM {{ ref('comm_op_stats') }}
    UNION ALL
    SELECT rank, capture, op_name, start_ns, end_ns FROM {{ ref('int_step_communication') }} c
    WHERE NOT EXISTS (SELECT 1 FROM {{ ref('comm_op_stats') }} o WHERE o.rank = c.rank AND o.capture = c.capture)
    UNION ALL  -- GPU traces: the NCCL kernels themselves
    SELECT rank, capture, coalesce(op_name, name), start_ns, end_ns FROM {{ ref('int_device_exec') }} e
    WHERE kind = 'kernel' AND regexp_matches(name, '(?i)nccl')
      AND NOT EXISTS (SELECT 1 FROM {{ ref('comm_op_stats') }} o WHERE o.rank = e.rank AND o.capture = e.capture)
      AND NOT EXISTS (SELECT 1 FROM {{ ref('int_step_communication') }} c WHERE c.rank = e.rank AND c.capture = e.capture)
), intervals AS (  -- what the sweep sees: the rank's timeline, a kind per interval; step edges only cut it
    SELECT {'rank': rank, 'capture': capture} AS grp, 'computing' AS category, start_ns, end_ns
    FROM {{ ref('int_device_exec') }}
    WHERE (rank, capture) IN (SELECT (rank, capture) FROM steps) AND kind IN ('task', 'kernel', 'memcpy', 'memset')
      -- (a collective's own kernel; Broadcast but not the compute op BroadcastTo)
      AND NOT regexp_matches(name, '(?i)nccl|hcom_|AllReduce|AllGather|ReduceScatter|Broadcast([^T]|$)|AllToAll|Send-op|Receive-op')
    UNION ALL
    SELECT {'rank': rank, 'capture': capture},
           CASE WHEN coalesce(regexp_matches(op_name, '(?i)Receive-op|hcom_receive'), false) THEN 'receiving' ELSE 'collective' END,
           start_ns, end_ns
    FROM communication
    UNION ALL
    SELECT {'rank': rank, 'capture': capture}, 'step_edge', edge_ns, edge_ns
    FROM steps, unnest([start_ns, end_ns]) AS t(edge_ns)
), pieces AS (
    SELECT grp.rank AS rank, grp.capture AS capture, start_ns, end_ns,
           list_contains(categories, 'computing') AS computing, list_contains(categories, 'collective') AS collective,
           list_contains(categories, 'receiving') AS receiving
    FROM interval_sweep(intervals)
), overlapped AS (  -- steps that end after the next one starts (MindSpore GPU steps may): that stretch is theirs too
    SELECT * FROM (SELECT *, lead(start_ns) OVER (PARTITION BY rank, capture ORDER BY start_ns, step) AS next_start_ns
                   FROM steps)
    WHERE next_start_ns < end_ns
), step_pieces AS (  -- the pieces inside a step window, with their step: the last step started, and an earlier one
                     -- still open
    SELECT p.*, s.step
    FROM pieces p ASOF JOIN steps s ON p.rank = s.rank AND p.capture = s.capture AND p.start_ns >= s.start_ns
    WHERE p.end_ns <= s.end_ns
    UNION ALL
    SELECT p.*, s.step
    FROM pieces p JOIN overlapped s ON p.rank = s.rank AND p.capture = s.capture AND p.start_ns >= s.next_start_ns
                                   AND p.end_ns <= s.end_ns
), labelled AS (
    SELECT rank, capture, step, category, start_ns, end_ns
    FROM (SELECT *, collective OR receiving AS communicating FROM step_pieces), unnest(list_filter([
        CASE WHEN computing THEN 'computation' END,
        CASE WHEN communicating THEN 'communication' END,
        CASE WHEN communicating AND NOT computing THEN 'pure_communication' END,
        CASE WHEN collective AND NOT computing THEN 'collective_alone' END,
        CASE WHEN receiving AND NOT collective AND NOT computing THEN 'receive_alone' END,
        CASE WHEN NOT computing AND NOT communicating THEN 'free' END], lambda c: c IS NOT NULL)) AS t(category)
), runs AS (  -- pieces of a category that touch share their start minus the durations before them: one key per run
              -- (the sweep's pieces never overlap, so the key only grows, by the gap, where a run ends)
    SELECT *, start_ns - (sum(end_ns - start_ns) OVER (PARTITION BY rank, capture, step, category ORDER BY start_ns
                                                       ROWS UNBOUNDED PRECEDING) - (end_ns - start_ns)) AS run
    FROM labelled
)
SELECT rank, capture, step, category, min(start_ns) AS start_ns, max(end_ns) AS end_ns, max(end_ns) - min(start_ns) AS dur_ns
FROM runs
GROUP BY rank, capture, step, category, run
