WITH frames AS (
    SELECT * FROM {{ ref('int_python_frame_path') }}
), children AS (  -- the time of the frames each frame called directly
    SELECT rank, capture, parent_index AS frame_index, sum(dur_ns) AS child_ns
    FROM frames WHERE parent_index >= 0
    GROUP BY rank, capture, parent_index
), ops AS (  -- the host ops that ran with the frame innermost, and the device time they launched
    SELECT rank, capture, frame_index, count(*) AS ops, sum(device_ns) AS device_ns
    FROM {{ ref('int_op_device_time') }} WHERE frame_index IS NOT NULL
    GROUP BY rank, capture, frame_index
), own AS (
    SELECT f.rank, f.capture, f.tid, f.path_id, count(*) AS calls, min(f.start_ns) AS first_start_ns,
           sum(f.dur_ns) AS total_ns, sum(f.dur_ns - coalesce(c.child_ns, 0)) AS self_ns,
           coalesce(sum(o.ops), 0) AS self_ops, coalesce(sum(o.device_ns), 0) AS device_self_ns
    FROM frames f
    LEFT JOIN children c USING (rank, capture, frame_index)
    LEFT JOIN ops o USING (rank, capture, frame_index)
    GROUP BY f.rank, f.capture, f.tid, f.path_id
), below AS (  -- each path's own ops and device time, handed up to every path it extends
    SELECT o.rank, o.capture, o.tid, unnest(p.path_ids) AS path_id, o.self_ops, o.device_self_ns
    FROM own o JOIN {{ ref('int_python_path') }} p
        ON p.rank = o.rank AND p.capture = o.capture AND p.tid IS NOT DISTINCT FROM o.tid AND p.path_id = o.path_id
    WHERE o.self_ops > 0
), totals AS (
    SELECT rank, capture, tid, path_id, sum(self_ops) AS total_ops, sum(device_self_ns) AS device_total_ns
    FROM below GROUP BY rank, capture, tid, path_id
)
SELECT p.rank, p.capture, p.tid, p.path_id, p.parent_path_id, p.depth, p.frame, p.frame_kind, p.call_path,
       o.calls, o.first_start_ns, o.total_ns, o.self_ns, o.self_ops, coalesce(t.total_ops, 0) AS total_ops,
       o.device_self_ns, coalesce(t.device_total_ns, 0) AS device_total_ns
FROM {{ ref('int_python_path') }} p
JOIN own o ON o.rank = p.rank AND o.capture = p.capture AND o.tid IS NOT DISTINCT FROM p.tid AND o.path_id = p.path_id
LEFT JOIN totals t ON t.rank = p.rank AND t.capture = p.capture AND t.tid IS NOT DISTINCT FROM p.tid AND t.path_id = p.path_id
