WITH steps AS (
    SELECT rank, capture, step, start_ns, end_ns FROM {{ ref('step_phases') }}
    WHERE (rank, capture) IN (SELECT DISTINCT (rank, capture) FROM {{ ref('int_device_exec') }}) AND end_ns > start_ns
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
), intervals AS (
    SELECT rank, capture, 1 AS computing, 0 AS collective, 0 AS receiving, start_ns, end_ns
    FROM {{ ref('int_device_exec') }}
    WHERE (rank, capture) IN (SELECT (rank, capture) FROM steps) AND kind IN ('task', 'kernel', 'memcpy', 'memset')
      AND NOT regexp_matches(name, '(?i)nccl|hcom_|AllReduce|AllGather|ReduceScatter|Broadcast|AllToAll|Send-op|Receive-op')
    UNION ALL
    SELECT rank, capture, 0, CASE WHEN is_receive THEN 0 ELSE 1 END, CASE WHEN is_receive THEN 1 ELSE 0 END, start_ns, end_ns
    FROM (SELECT *, coalesce(regexp_matches(op_name, '(?i)Receive-op|hcom_receive'), false) AS is_receive
          FROM communication)
), cuts AS (  -- +1 / -1 per interval edge, 0 at the step edges (so no piece straddles one)
    SELECT rank, capture, start_ns AS at_ns, computing, collective, receiving FROM intervals
    UNION ALL
    SELECT rank, capture, end_ns, -computing, -collective, -receiving FROM intervals
    UNION ALL
    SELECT rank, capture, start_ns, 0, 0, 0 FROM steps
    UNION ALL
    SELECT rank, capture, end_ns, 0, 0, 0 FROM steps
), points AS (
    SELECT rank, capture, at_ns, sum(computing) AS computing, sum(collective) AS collective, sum(receiving) AS receiving
    FROM cuts GROUP BY rank, capture, at_ns
), pieces AS (
    SELECT rank, capture, at_ns AS start_ns, lead(at_ns) OVER w AS end_ns,
           sum(computing) OVER (w ROWS UNBOUNDED PRECEDING) > 0 AS computing,
           sum(collective) OVER (w ROWS UNBOUNDED PRECEDING) > 0 AS collective,
           sum(receiving) OVER (w ROWS UNBOUNDED PRECEDING) > 0 AS receiving
    FROM points
    WINDOW w AS (PARTITION BY rank, capture ORDER BY at_ns)
), step_pieces AS (  -- the pieces inside a step window, with their step
    SELECT p.*, s.step
    FROM pieces p ASOF JOIN steps s ON p.rank = s.rank AND p.capture = s.capture AND p.start_ns >= s.start_ns
    WHERE p.end_ns <= s.end_ns
), labelled AS (
    SELECT rank, capture, step, category, start_ns, end_ns
    FROM (SELECT *, collective OR receiving AS communicating FROM step_pieces), unnest(list_filter([
        CASE WHEN computing THEN 'computation' END,
        CASE WHEN communicating THEN 'communication' END,
        CASE WHEN communicating AND NOT computing THEN 'pure_communication' END,
        CASE WHEN collective AND NOT computing THEN 'collective_alone' END,
        CASE WHEN receiving AND NOT collective AND NOT computing THEN 'receive_alone' END,
        CASE WHEN NOT computing AND NOT communicating THEN 'free' END], lambda c: c IS NOT NULL)) AS t(category)
), runs AS (
    SELECT *, sum(CASE WHEN start_ns = previous_end THEN 0 ELSE 1 END)
                  OVER (PARTITION BY rank, capture, step, category ORDER BY start_ns ROWS UNBOUNDED PRECEDING) AS run
    FROM (SELECT *, lag(end_ns) OVER (PARTITION BY rank, capture, step, category ORDER BY start_ns) AS previous_end
          FROM labelled)
)
SELECT rank, capture, step, category, min(start_ns) AS start_ns, max(end_ns) AS end_ns, max(end_ns) - min(start_ns) AS dur_ns
FROM runs
GROUP BY rank, capture, step, category, run
