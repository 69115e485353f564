WITH paths AS (
    SELECT t.rank, t.capture, t.self_ops, t.device_self_ns, p.frames, p.source_frame
    FROM {{ ref('python_call_tree') }} t
    JOIN {{ ref('int_python_path') }} p
        ON p.rank = t.rank AND p.capture = t.capture AND p.tid IS NOT DISTINCT FROM t.tid AND p.path_id = t.path_id
), stacks AS (  -- ops without timed frames that carry a Call stack arg (innermost first): one row per stack
    SELECT rank, capture, count(*) AS self_ops, sum(device_ns) AS device_self_ns,
           list_filter(list_transform(string_split(call_stack, ';'), lambda x: trim(x)), lambda x: x <> '') AS innermost_first
    FROM {{ ref('int_op_device_time') }}
    WHERE frame_index IS NULL AND call_stack IS NOT NULL
    GROUP BY rank, capture, call_stack
), stacks_named AS (
    SELECT *, list_filter(innermost_first, lambda x: python_frame_kind(x) = 'python')[1] AS source_frame FROM stacks
), attributed AS (  -- each path's or stack's ops counted once under every frame on it (a recursive frame once)
    SELECT rank, capture, unnest(list_distinct(frames)) AS frame, 'python_function' AS stack_from,
           self_ops AS ops, device_self_ns AS device_ns, false AS is_self
    FROM paths WHERE self_ops > 0
    UNION ALL
    SELECT rank, capture, source_frame, 'python_function', self_ops, device_self_ns, true
    FROM paths WHERE self_ops > 0 AND source_frame IS NOT NULL
    UNION ALL
    SELECT rank, capture, unnest(list_distinct(innermost_first)), 'call_stack', self_ops, device_self_ns, false
    FROM stacks_named
    UNION ALL
    SELECT rank, capture, source_frame, 'call_stack', self_ops, device_self_ns, true
    FROM stacks_named WHERE source_frame IS NOT NULL
), timed AS (  -- the frames' calls, and the host time of the outermost ones (a recursive call is inside another)
    SELECT f.rank, f.capture, f.name AS frame, count(*) AS calls,
           sum(f.dur_ns) FILTER (WHERE NOT p.recursive) AS host_total_ns
    FROM {{ ref('int_python_frame_path') }} f
    JOIN {{ ref('int_python_path') }} p
        ON p.rank = f.rank AND p.capture = f.capture AND p.tid IS NOT DISTINCT FROM f.tid AND p.path_id = f.path_id
    GROUP BY f.rank, f.capture, f.name
), sums AS (
    SELECT rank, capture, frame, string_agg(DISTINCT stack_from, ',' ORDER BY stack_from) AS stack_from,
           sum(ops) FILTER (WHERE NOT is_self) AS total_ops, coalesce(sum(ops) FILTER (WHERE is_self), 0) AS self_ops,
           sum(device_ns) FILTER (WHERE NOT is_self) AS device_total_ns,
           coalesce(sum(device_ns) FILTER (WHERE is_self), 0) AS device_self_ns
    FROM attributed GROUP BY rank, capture, frame
), device AS (
    SELECT rank, capture, sum(dur_ns) AS device_ns FROM {{ ref('stg_device_exec') }} GROUP BY rank, capture
)
SELECT rank, capture, frame, python_frame_kind(frame) AS frame_kind,
       nullif(regexp_extract(frame, python_frame_re(), 1, 's'), '') AS source_file,
       try_cast(nullif(regexp_extract(frame, python_frame_re(), 2, 's'), '') AS BIGINT) AS source_line,
       nullif(regexp_extract(frame, python_frame_re(), 3, 's'), '') AS function,
       coalesce(s.stack_from, 'python_function') AS stack_from, t.calls, t.host_total_ns,
       coalesce(s.total_ops, 0) AS total_ops, coalesce(s.self_ops, 0) AS self_ops,
       coalesce(s.device_total_ns, 0) AS device_total_ns, coalesce(s.device_self_ns, 0) AS device_self_ns,
       coalesce(s.device_total_ns, 0) / nullif(d.device_ns, 0) AS device_total_share,
       coalesce(s.device_self_ns, 0) / nullif(d.device_ns, 0) AS device_self_share
FROM sums s FULL JOIN timed t USING (rank, capture, frame)
LEFT JOIN device d USING (rank, capture)
