-- MindSpore's float arithmetic: each link unit's time in µs (an RDMA triple: its three tasks' µs added), summed one
-- by one in task order, / 1000; the marts hold the same figures as exact integer ns.
WITH units AS (
    SELECT *, CASE WHEN transport = 'RDMA' THEN first_ns / 1000 + second_send_ns / 1000 + wait_ns / 1000
                   ELSE dur_ns / 1000 END AS time_us,
           wait_ns / 1000 AS wait_us
    FROM {{ ref('comm_link_task') }}
), links AS (
    SELECT rank, capture, op_name, iteration, link, transport, min(seq) AS first_seq,
           list_reduce(list(time_us ORDER BY seq), lambda a, b: a + b) / 1000 AS time_ms,
           list_reduce(list(time_us ORDER BY seq) FILTER (WHERE main_plane), lambda a, b: a + b) / 1000 AS main_time_ms,
           sum(bytes)::BIGINT / 1e3 AS size_kb,
           list_reduce(list(wait_us ORDER BY seq), lambda a, b: a + b) / 1000 AS wait_ms,
           list_reduce(list(wait_us ORDER BY seq) FILTER (WHERE main_plane), lambda a, b: a + b) / 1000 AS main_wait_ms
    FROM units
    GROUP BY rank, capture, op_name, iteration, link, transport
), costs AS (
    SELECT rank, capture, op_name, iteration,
           list_reduce(list(main_time_ms ORDER BY first_seq) FILTER (WHERE main_time_ms IS NOT NULL),
                       lambda a, b: a + b) AS cost_ms,
           list_reduce(list(main_wait_ms ORDER BY first_seq) FILTER (WHERE main_wait_ms IS NOT NULL),
                       lambda a, b: a + b) AS rdma_wait_ms,
           list({'link': link, 'transport': transport, 'time_ms': time_ms, 'size_kb': size_kb,
                 'bandwidth': size_kb / (time_ms / 1e3), 'wait_ms': wait_ms} ORDER BY first_seq) AS links
    FROM links
    GROUP BY rank, capture, op_name, iteration
), waits AS (
    SELECT rank, capture, op_name, iteration,
           list_reduce(list(dur_ns / 1000 ORDER BY seq) FILTER (WHERE main_plane AND task_type = 'Notify Wait'),
                       lambda a, b: a + b) / 1000 AS notify_wait_ms
    FROM {{ ref('comm_op_task') }}
    GROUP BY rank, capture, op_name, iteration
)
SELECT o.rank, o.capture, r.device_id, o.step, o.op_label, o.op_name, o.iteration, o.start_ns,
       coalesce(c.cost_ms, 0.0) AS communication_cost,
       coalesce(w.notify_wait_ms, 0.0) - coalesce(c.rdma_wait_ms, 0.0) AS wait_cost,
       c.links AS link_info
FROM {{ ref('comm_op_stats') }} o
JOIN {{ ref('ascend_rank') }} r USING (rank)
LEFT JOIN waits w USING (rank, capture, op_name, iteration)
LEFT JOIN costs c USING (rank, capture, op_name, iteration)
WHERE o.step IS NOT NULL
