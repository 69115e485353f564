WITH per_name AS (  -- a rank's captures together, as MindSpore writes one file per rank
    SELECT rank, name, arg_min(launch_api, capture) AS launch_api, arg_min(op_name, capture) AS op_name,
           arg_min(stream_id, capture) AS stream_id, arg_min(block_dim, capture) AS block_dim,
           arg_min(grid_dim, capture) AS grid_dim, sum(instances)::BIGINT AS instances,
           sum(total_ns) AS total_ns, max(max_ns) AS max_ns, min(min_ns) AS min_ns
    FROM {{ ref('kernel_name_stats') }}
    GROUP BY rank, name
)
SELECT rank, name, coalesce(launch_api, 'cuLaunchKernel') AS type, op_name AS op_full_name, stream_id,
       block_dim, grid_dim, instances AS occurrences,
       printf('%.6g', total_ns / 1e3) AS "total_duration(us)",
       printf('%.6g', total_ns / 1e3 / instances) AS "avg_duration(us)",
       printf('%.6g', max_ns / 1e3) AS "max_duration(us)",
       printf('%.6g', min_ns / 1e3) AS "min_duration(us)",
       total_ns
FROM per_name
