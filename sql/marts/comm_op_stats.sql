WITH executions AS (
    SELECT rank, capture, step, op_label, op_name, iteration, min(start_ns) AS start_ns, max(start_ns + dur_ns) AS end_ns,
           list_reduce(list(dur_ns / 1000 ORDER BY seq) FILTER (WHERE main_plane AND task_type = 'Notify Wait'),
                       lambda a, b: a + b) / 1000 AS notify_wait_ms
    FROM {{ ref('int_comm_task') }}
    GROUP BY rank, capture, step, op_label, op_name, iteration
), link_costs AS (
    SELECT rank, capture, op_name, iteration,
           list_reduce(list(main_time_ms ORDER BY first_seq) FILTER (WHERE main_time_ms IS NOT NULL),
                       lambda a, b: a + b) AS communication_cost_ms,
           list_reduce(list(main_wait_ms ORDER BY first_seq) FILTER (WHERE main_wait_ms IS NOT NULL),
                       lambda a, b: a + b) AS rdma_wait_ms,
           count(*) AS links
    FROM {{ ref('comm_link_stats') }}
    GROUP BY rank, capture, op_name, iteration
)
SELECT e.rank, e.capture, e.step, e.op_label, e.op_name, e.iteration, e.start_ns, e.end_ns,
       coalesce(l.communication_cost_ms, 0.0) AS communication_cost_ms,
       CASE WHEN l.rdma_wait_ms IS NULL THEN coalesce(e.notify_wait_ms, 0.0)
            ELSE coalesce(e.notify_wait_ms, 0.0) - l.rdma_wait_ms END AS wait_cost_ms,
       coalesce(l.links, 0) AS links
FROM executions e
LEFT JOIN link_costs l USING (rank, capture, op_name, iteration)
