WITH RECURSIVE own AS (
    SELECT h.rank, h.capture, h.op_name, h.category, h.op_index, h.parent_index, h.dur_ns,
           coalesce(l.device_ns, 0) AS device_self_ns
    FROM {{ ref('stg_host_op') }} h
    LEFT JOIN (SELECT rank, capture, op_index, sum(dur_ns) AS device_ns FROM {{ ref('stg_device_exec') }}
               WHERE op_index IS NOT NULL GROUP BY rank, capture, op_index) l USING (rank, capture, op_index)
), children AS (
    SELECT rank, capture, parent_index AS op_index, sum(dur_ns) AS child_ns
    FROM own WHERE parent_index >= 0
    GROUP BY rank, capture, parent_index
), climb AS (  -- each op's own device time, handed up to every op it is nested in
    SELECT rank, capture, op_index, parent_index, device_self_ns AS device_ns FROM own WHERE device_self_ns > 0
    UNION ALL
    SELECT c.rank, c.capture, p.op_index, p.parent_index, c.device_ns
    FROM climb c JOIN own p ON p.rank = c.rank AND p.capture = c.capture AND p.op_index = c.parent_index
), device_total AS (
    SELECT rank, capture, op_index, sum(device_ns) AS device_total_ns FROM climb GROUP BY rank, capture, op_index
), per_name AS (
    SELECT o.rank, o.op_name, any_value(o.category) AS category, count(*) AS calls,
           sum(o.dur_ns) AS host_total_ns, sum(o.dur_ns - coalesce(c.child_ns, 0)) AS host_self_ns,
           sum(o.device_self_ns) AS device_self_ns, coalesce(sum(t.device_total_ns), 0) AS device_total_ns
    FROM own o
    LEFT JOIN children c USING (rank, capture, op_index)
    LEFT JOIN device_total t USING (rank, capture, op_index)
    GROUP BY o.rank, o.op_name
)
SELECT *, host_self_ns / nullif(sum(host_self_ns) OVER (PARTITION BY rank), 0) AS host_self_share
FROM per_name
