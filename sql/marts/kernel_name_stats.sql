-- Per kernel name: the profiler's own record for the name (kernel_meta: MindSpore's gpu_activity_data) where it has
-- one, else what the trace says of the name's executions: the op and stream of the first one, the launching runtime
-- call of the first one linked to its call (int_launched_activity, by correlation id), and the grid and block of
-- the first one that has them (device_exec, e.g. Kineto's grid and block args).
WITH per_name AS (
    SELECT rank, capture, name,
           arg_min(op_name, start_ns) AS first_op_name, arg_min(stream_id, start_ns) AS first_stream_id,
           count(*) AS instances, sum(dur_ns) AS total_ns, max(dur_ns) AS max_ns, min(dur_ns) AS min_ns
    FROM {{ ref('int_device_exec') }}
    WHERE kind = 'kernel'
    GROUP BY rank, capture, name
), launches AS (
    SELECT rank, capture, name, arg_min(api_name, start_ns) AS first_api
    FROM {{ ref('int_launched_activity') }}
    WHERE kind = 'kernel' AND api_name IS NOT NULL
    GROUP BY rank, capture, name
), shapes AS (
    SELECT rank, capture, name, arg_min({'grid': grid, 'block': block}, start_ns) AS first_shape
    FROM {{ ref('stg_device_exec') }}
    WHERE kind = 'kernel' AND (grid IS NOT NULL OR block IS NOT NULL)
    GROUP BY rank, capture, name
)
SELECT p.rank, p.capture, p.name,
       coalesce(m.launch_api, l.first_api) AS launch_api,
       coalesce(m.op_name, p.first_op_name) AS op_name,
       coalesce(m.stream_id, p.first_stream_id) AS stream_id,
       coalesce(m.block_dim, s.first_shape.block) AS block_dim, coalesce(m.grid_dim, s.first_shape.grid) AS grid_dim,
       p.instances, p.total_ns, p.max_ns, p.min_ns
FROM per_name p
LEFT JOIN {{ ref('stg_kernel_meta') }} m ON m.rank = p.rank AND m.capture = p.capture AND m.name = p.name
LEFT JOIN launches l ON l.rank = p.rank AND l.capture = p.capture AND l.name = p.name
LEFT JOIN shapes s ON s.rank = p.rank AND s.capture = p.capture AND s.name = p.name
