-- comm_link_stats: one row per link of one communication op execution (rank, op_name, iteration, link, transport): its time, bytes and bandwidth as MindSpore's hccl_raw computes them.
-- Columns:
--   rank, step, op_label, op_name, iteration, link ('<src>-<dst>'), transport (SDMA or RDMA).
--   first_seq: position of the link's first task in the execution (MindSpore lists links in this order).
--   time_ms: SDMA: the Reduce Inline and Memcpy task durations; RDMA: each RDMASend, RDMASend, Notify Wait
--     triple. Summed one by one in task order in µs, then / 1000 (MindSpore's float arithmetic, so values
--     compare equal to its files). main_time_ms: the same over the main plane only.
--   bytes: data moved (the SDMA tasks' sizes; the two sends of each RDMA triple).  size_kb = bytes / 1000.
--   bandwidth_kb_s = size_kb / (time_ms / 1000) (MindSpore's "bandwidth": KB per second).
--   wait_ms, main_wait_ms: RDMA only: the Notify Wait of each triple (all planes / main plane); NULL for SDMA.
-- Left out: LOCAL tasks, which MindSpore appends to an RDMA group when the link has one.
WITH rdma AS (
    SELECT *,
           lead(task_type, 1) OVER w AS next_type, lead(task_type, 2) OVER w AS after_next_type,
           lead(dur_ns, 1) OVER w AS next_dur_ns, lead(dur_ns, 2) OVER w AS after_next_dur_ns,
           lead(bytes, 1) OVER w AS next_bytes
    FROM stg_comm_task
    WHERE transport = 'RDMA'
    WINDOW w AS (PARTITION BY rank, capture, op_name, iteration, link ORDER BY seq)
), link_tasks AS (
    SELECT rank, capture, step, op_label, op_name, iteration, link, transport, seq, main_plane,
           dur_ns / 1000 AS time_us, bytes, NULL::DOUBLE AS wait_us
    FROM stg_comm_task
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
