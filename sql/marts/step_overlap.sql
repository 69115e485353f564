WITH covered AS (
    SELECT rank, capture, step,
           coalesce(sum(dur_ns) FILTER (WHERE category = 'computation'), 0)::BIGINT AS computation_ns,
           coalesce(sum(dur_ns) FILTER (WHERE category = 'communication'), 0)::BIGINT AS communication_ns,
           coalesce(sum(dur_ns) FILTER (WHERE category = 'pure_communication'), 0)::BIGINT AS pure_communication_ns,
           coalesce(sum(dur_ns) FILTER (WHERE category = 'free'), 0)::BIGINT AS free_ns,
           coalesce(sum(dur_ns) FILTER (WHERE category = 'receive_alone'), 0)::BIGINT AS receive_alone_ns,
           coalesce(sum(dur_ns) FILTER (WHERE category = 'collective_alone'), 0)::BIGINT AS collective_alone_ns,
           min(start_ns) FILTER (WHERE category IN ('computation', 'communication')) AS first_busy_ns
    FROM {{ ref('overlap_segment') }}
    GROUP BY rank, capture, step
), bubbles AS (  -- msprof-analyze's Bubble: the length of each pipeline Receive op starting in the step's window
    SELECT s.rank, s.capture, s.step, sum(o.end_ns - o.start_ns)::BIGINT AS bubble_ns
    FROM {{ ref('int_step_device_window') }} s
    JOIN {{ ref('comm_op_stats') }} o ON o.rank = s.rank AND o.capture = s.capture AND o.start_ns >= s.start_ns
                                     AND o.start_ns < s.end_ns
    WHERE regexp_matches(o.op_name, '(?i)Receive-op|hcom_receive')
    GROUP BY s.rank, s.capture, s.step
)
SELECT s.rank, s.capture, s.step, s.start_ns, s.end_ns, s.end_ns - s.start_ns AS total_ns,
       c.computation_ns, c.communication_ns,
       c.communication_ns - c.pure_communication_ns AS overlapped_communication_ns,
       c.pure_communication_ns, c.free_ns, c.receive_alone_ns, c.collective_alone_ns,
       s.end_ns - s.start_ns - c.receive_alone_ns AS stage_ns,
       coalesce(b.bubble_ns, 0) AS bubble_ns,
       c.first_busy_ns - h.start_ns AS preparing_ns
FROM {{ ref('int_step_device_window') }} s  -- the window overlap_segment split: a host step's GPU window
JOIN covered c USING (rank, capture, step)
JOIN {{ ref('int_step') }} h USING (rank, capture, step)
LEFT JOIN bubbles b USING (rank, capture, step)
