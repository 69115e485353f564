-- Each host op's device time: what it launched itself (device_exec.op_index) and what it launched with the ops nested
-- in it (its own handed up to every op it is nested in, parent_index by parent_index), for host_op_stats and
-- op_roofline.
WITH RECURSIVE own AS (
    SELECT h.rank, h.capture, h.op_index, h.parent_index, coalesce(l.device_ns, 0) AS device_self_ns
    FROM {{ ref('stg_host_op') }} h
    LEFT JOIN (SELECT rank, capture, op_index, sum(dur_ns) AS device_ns FROM {{ ref('stg_device_exec') }}
               WHERE op_index IS NOT NULL GROUP BY rank, capture, op_index) l USING (rank, capture, op_index)
    WHERE h.op_index IS NOT NULL
), climb AS (
    SELECT rank, capture, op_index, parent_index, device_self_ns AS device_ns FROM own WHERE device_self_ns > 0
    UNION ALL
    SELECT c.rank, c.capture, p.op_index, p.parent_index, c.device_ns
    FROM climb c JOIN own p ON p.rank = c.rank AND p.capture = c.capture AND p.op_index = c.parent_index
)
SELECT o.rank, o.capture, o.op_index, o.device_self_ns::BIGINT AS device_self_ns,
       coalesce(t.device_total_ns, 0)::BIGINT AS device_total_ns
FROM own o
LEFT JOIN (SELECT rank, capture, op_index, sum(device_ns) AS device_total_ns FROM climb
           GROUP BY rank, capture, op_index) t USING (rank, capture, op_index)
