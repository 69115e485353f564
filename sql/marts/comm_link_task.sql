WITH rdma AS (
    SELECT *,
           lead(task_type, 1) OVER w AS next_type, lead(task_type, 2) OVER w AS after_next_type,
           lead(dur_ns, 1) OVER w AS next_dur_ns, lead(dur_ns, 2) OVER w AS after_next_dur_ns,
           lead(bytes, 1) OVER w AS next_bytes
    FROM {{ ref('int_comm_task') }}
    WHERE transport = 'RDMA'
    WINDOW w AS (PARTITION BY rank, capture, op_name, iteration, link ORDER BY seq)
)
SELECT rank, capture, step, op_label, op_name, iteration, link, transport, seq, main_plane,
       dur_ns, dur_ns AS first_ns, NULL::BIGINT AS second_send_ns, NULL::BIGINT AS wait_ns, bytes
FROM {{ ref('int_comm_task') }}
WHERE transport = 'SDMA' AND task_type IN ('Reduce Inline', 'Memcpy')
UNION ALL
SELECT rank, capture, step, op_label, op_name, iteration, link, transport, seq, main_plane,
       dur_ns + next_dur_ns + after_next_dur_ns, dur_ns, next_dur_ns, after_next_dur_ns,
       coalesce(bytes, 0) + coalesce(next_bytes, 0)
FROM rdma
WHERE task_type = 'RDMASend' AND next_type = 'RDMASend' AND after_next_type = 'Notify Wait'
