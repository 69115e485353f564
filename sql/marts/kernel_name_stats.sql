WITH per_name AS (
    SELECT rank, capture, name,
           arg_min(op_name, start_ns) AS first_op_name, arg_min(stream_id, start_ns) AS first_stream_id,
           count(*) AS instances, sum(dur_ns) AS total_ns, max(dur_ns) AS max_ns, min(dur_ns) AS min_ns
    FROM {{ ref('int_device_exec') }}
    WHERE kind = 'kernel'
    GROUP BY rank, capture, name
)
SELECT p.rank, p.capture, p.name,
       m.launch_api,
       coalesce(m.op_name, p.first_op_name) AS op_name,
       coalesce(m.stream_id, p.first_stream_id) AS stream_id,
       m.block_dim, m.grid_dim, p.instances, p.total_ns, p.max_ns, p.min_ns
FROM per_name p
LEFT JOIN {{ ref('stg_kernel_meta') }} m ON m.rank = p.rank AND m.capture = p.capture AND m.name = p.name
