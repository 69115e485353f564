WITH types AS (
    SELECT rank, op_name, op_type FROM {{ ref('device_op_stats') }}
)
SELECT
    m.rank,
    coalesce(t.op_type, op_type_of(m.op_name)) AS op_type,
    m.core,
    m.metric,
    m.unit,
    count(DISTINCT m.op_name) AS ops,
    count(*) AS executions,
    avg(m.value) AS avg_value,
    min(m.value) AS min_value,
    max(m.value) AS max_value
FROM {{ ref('int_exec_metric') }} m
LEFT JOIN types t USING (rank, op_name)
GROUP BY ALL
