-- A window's critical path in one row: its length, the time per edge type and its share, the ops and activities
-- with the most time on it.
WITH path AS (
    SELECT rank, capture, step, sum(weight_ns)::BIGINT AS path_length_ns, count(*) AS edges,
           min(from_ns) AS path_start_ns, max(to_ns) AS path_end_ns,
           sum(weight_ns) FILTER (WHERE edge_type = 'cpu_op')::BIGINT AS cpu_ns,
           sum(weight_ns) FILTER (WHERE bound_by = 'gpu_compute_bound')::BIGINT AS gpu_compute_ns,
           sum(weight_ns) FILTER (WHERE bound_by = 'gpu_communication_bound')::BIGINT AS gpu_communication_ns,
           sum(weight_ns) FILTER (WHERE edge_type = 'launch')::BIGINT AS launch_ns,
           sum(weight_ns) FILTER (WHERE edge_type = 'kernel_kernel')::BIGINT AS kernel_kernel_ns,
           count(*) FILTER (WHERE edge_type = 'sync') AS sync_edges
    FROM {{ ref('critical_path_edge') }} GROUP BY rank, capture, step
), per_event AS (
    SELECT rank, capture, step, edge_type = 'cpu_op' AS on_host, event_name, sum(weight_ns) AS ns
    FROM {{ ref('critical_path_edge') }}
    WHERE edge_type IN ('cpu_op', 'gpu_op') AND event_name IS NOT NULL
    GROUP BY ALL
), top AS (
    SELECT rank, capture, step,
           arg_max(event_name, (ns, event_name)) FILTER (WHERE on_host) AS top_op,
           max(ns) FILTER (WHERE on_host)::BIGINT AS top_op_ns,
           arg_max(event_name, (ns, event_name)) FILTER (WHERE NOT on_host) AS top_kernel,
           max(ns) FILTER (WHERE NOT on_host)::BIGINT AS top_kernel_ns
    FROM per_event GROUP BY ALL
)
SELECT p.rank, p.capture, p.step, p.path_start_ns, p.path_end_ns, p.path_length_ns, p.edges, p.sync_edges,
       coalesce(p.cpu_ns, 0) AS cpu_ns, coalesce(p.gpu_compute_ns, 0) AS gpu_compute_ns,
       coalesce(p.gpu_communication_ns, 0) AS gpu_communication_ns, coalesce(p.launch_ns, 0) AS launch_ns,
       coalesce(p.kernel_kernel_ns, 0) AS kernel_kernel_ns,
       coalesce(p.cpu_ns, 0) / nullif(p.path_length_ns, 0) AS cpu_share,
       coalesce(p.gpu_compute_ns, 0) / nullif(p.path_length_ns, 0) AS gpu_compute_share,
       coalesce(p.gpu_communication_ns, 0) / nullif(p.path_length_ns, 0) AS gpu_communication_share,
       coalesce(p.launch_ns, 0) / nullif(p.path_length_ns, 0) AS launch_share,
       coalesce(p.kernel_kernel_ns, 0) / nullif(p.path_length_ns, 0) AS kernel_kernel_share,
       t.top_op, t.top_op_ns, t.top_kernel, t.top_kernel_ns
FROM path p LEFT JOIN top t ON t.rank = p.rank AND t.capture = p.capture AND t.step IS NOT DISTINCT FROM p.step
