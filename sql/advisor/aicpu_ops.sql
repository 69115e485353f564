-- AI CPU op types of an Ascend rank whose longest execution runs more than the threshold (aicpu_op_exec), with
-- their executions and time, and that time as a share of the rank's device op time (device_op_type_stats).
WITH device AS (
    SELECT rank, sum(total_ns) AS device_ns FROM {{ ref('device_op_type_stats') }} GROUP BY rank
)
SELECT a.rank, NULL::INTEGER AS capture, NULL::BIGINT AS step, max(a.total_ns) AS value, a.op_type,
       count(*) AS executions, count(*) FILTER (WHERE a.total_ns > {{ threshold }}) AS long_executions,
       sum(a.total_ns) AS total_ns, sum(a.total_ns) / any_value(d.device_ns) AS device_time_share
FROM {{ ref('aicpu_op_exec') }} a
LEFT JOIN device d USING (rank)
GROUP BY a.rank, a.op_type
HAVING max(a.total_ns) > {{ threshold }}
