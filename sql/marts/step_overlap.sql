WITH covered AS (
    SELECT rank, capture, step,
           coalesce(sum(dur_ns) FILTER (WHERE category = 'computation'), 0)::BIGINT AS computation_ns,
           coalesce(sum(dur_ns) FILTER (WHERE category = 'communication'), 0)::BIGINT AS communication_ns,
           coalesce(sum(dur_ns) FILTER (WHERE category = 'pure_communication'), 0)::BIGINT AS pure_communication_ns,
           coalesce(sum(dur_ns) FILTER (WHERE category = 'free'), 0)::BIGINT AS free_ns,
           coalesce(sum(dur_ns) FILTER (WHERE category = 'receive_alone'), 0)::BIGINT AS receive_alone_ns,
           coalesce(sum(dur_ns) FILTER (WHERE category = 'collective_alone'), 0)::BIGINT AS collective_alone_ns
    FROM {{ ref('overlap_segment') }}
    GROUP BY rank, capture, step
)
SELECT s.rank, s.capture, s.step, s.start_ns, s.end_ns, s.end_ns - s.start_ns AS total_ns,
       c.computation_ns, c.communication_ns,
       c.communication_ns - c.pure_communication_ns AS overlapped_communication_ns,
       c.pure_communication_ns, c.free_ns, c.receive_alone_ns, c.collective_alone_ns,
       s.end_ns - s.start_ns - c.receive_alone_ns AS stage_ns
FROM {{ ref('int_step_device_window') }} s  -- the window overlap_segment split: a host step's GPU window
JOIN covered c USING (rank, capture, step)
