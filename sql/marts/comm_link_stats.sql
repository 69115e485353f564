WITH rdma AS (
    SELECT *,
           lead(task_type, 1) OVER w AS next_type, lead(task_type, 2) OVER w AS after_next_type,
           lead(dur_ns, 1) OVER w AS next_dur_ns, lead(dur_ns, 2) OVER w AS after_next_dur_ns,
           lead(bytes, 1) OVER w AS next_bytes
    FROM {{ ref('int_comm_task') }}
    WHERE transport = 'RDMA'
    WINDOW w AS (PARTITION BY rank, capture, op_name, iteration, link ORDER BY seq)
), link_tasks AS (
    SELECT rank, capture, step, op_label, op_name, iteration, link, transport, seq, main_plane,
           dur_ns / 1000 AS time_us, bytes, NULL::DOUBLE AS wait_us
    FROM {{ ref('int_comm_task') }}
    WHERE transport = 'SDMA' AND task_type IN ('Reduce Inline', 'Memcpy')
    UNION ALL
    SELECT rank, capture, step, op_label, op_name, iteration, link, transport, seq, main_plane,
           dur_ns / 1000 + next_dur_ns / 1000 + after_next_dur_ns / 1000,
           coalesce(bytes, 0) + coalesce(next_bytes, 0), after_next_dur_ns / 1000
    FROM rdma
    WHERE task_type = 'RDMASend' AND next_type = 'RDMASend' AND after_next_type = 'Notify Wait'
), links AS (
    SELECT
        rank, capture, step, op_label, op_name, iteration, link, transport,
        min(seq) AS first_seq,
        list_reduce(list(time_us ORDER BY seq), lambda a, b: a + b) / 1000 AS time_ms,
        list_reduce(list(time_us ORDER BY seq) FILTER (WHERE main_plane), lambda a, b: a + b) / 1000 AS main_time_ms,
        sum(bytes)::BIGINT AS bytes,
        list_reduce(list(wait_us ORDER BY seq), lambda a, b: a + b) / 1000 AS wait_ms,
        list_reduce(list(wait_us ORDER BY seq) FILTER (WHERE main_plane), lambda a, b: a + b) / 1000 AS main_wait_ms
    FROM link_tasks
    GROUP BY rank, capture, step, op_label, op_name, iteration, link, transport
)
SELECT rank, capture, step, op_label, op_name, iteration, link, transport, first_seq, time_ms, main_time_ms, bytes,
       bytes / 1e3 AS size_kb, (bytes / 1e3) / (time_ms / 1e3) AS bandwidth_kb_s, wait_ms, main_wait_ms
FROM links
