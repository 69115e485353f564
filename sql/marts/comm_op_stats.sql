WITH executions AS (
    SELECT rank, capture, step, op_label, op_name, iteration, min(start_ns) AS start_ns, max(start_ns + dur_ns) AS end_ns,
           sum(dur_ns) FILTER (WHERE main_plane AND task_type = 'Notify Wait') AS notify_wait_ns
    FROM {{ ref('int_comm_task') }}
    GROUP BY rank, capture, step, op_label, op_name, iteration
), link_costs AS (
    SELECT rank, capture, op_name, iteration, sum(main_time_ns) AS communication_cost_ns,
           sum(main_wait_ns) AS rdma_wait_ns, count(*) AS links
    FROM {{ ref('comm_link_stats') }}
    GROUP BY rank, capture, op_name, iteration
)
SELECT e.rank, e.capture, e.step, e.op_label, e.op_name, e.iteration, e.start_ns, e.end_ns,
       coalesce(l.communication_cost_ns, 0)::BIGINT AS communication_cost_ns,
       (coalesce(e.notify_wait_ns, 0) - coalesce(l.rdma_wait_ns, 0))::BIGINT AS wait_cost_ns,
       coalesce(l.links, 0) AS links
FROM executions e
LEFT JOIN link_costs l USING (rank, capture, op_name, iteration)
