WITH own AS (
    SELECT h.rank, h.capture, h.op_name, h.category, h.op_index, h.parent_index, h.dur_ns,
           coalesce(d.device_self_ns, 0) AS device_self_ns, d.device_total_ns
    FROM {{ ref('stg_host_op') }} h
    LEFT JOIN {{ ref('int_host_op_device_total') }} d USING (rank, capture, op_index)
), children AS (
    SELECT rank, capture, parent_index AS op_index, sum(dur_ns) AS child_ns
    FROM own WHERE parent_index >= 0
    GROUP BY rank, capture, parent_index
), per_name AS (
    SELECT o.rank, o.op_name, any_value(o.category) AS category, count(*) AS calls,
           sum(o.dur_ns) AS host_total_ns, sum(o.dur_ns - coalesce(c.child_ns, 0)) AS host_self_ns,
           sum(o.device_self_ns) AS device_self_ns, coalesce(sum(o.device_total_ns), 0) AS device_total_ns
    FROM own o
    LEFT JOIN children c USING (rank, capture, op_index)
    GROUP BY o.rank, o.op_name
)
SELECT *, host_self_ns / nullif(sum(host_self_ns) OVER (PARTITION BY rank), 0) AS host_self_share
FROM per_name
