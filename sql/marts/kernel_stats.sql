WITH kernels AS (
    SELECT * FROM {{ ref('int_device_exec') }} WHERE kind = 'kernel'
), main_op AS (
    SELECT rank, name, stream_id, first(op_name ORDER BY executions DESC, total_ns DESC, op_name) AS op_name
    FROM (SELECT rank, name, stream_id, op_name, count(*) AS executions, sum(dur_ns) AS total_ns
          FROM kernels WHERE op_name IS NOT NULL GROUP BY ALL)
    GROUP BY ALL
)
SELECT
    k.rank,
    k.name,
    k.stream_id,
    unnest(duration_stats(k.dur_ns)),
    sum(k.dur_ns) / nullif(sum(sum(k.dur_ns)) OVER (PARTITION BY k.rank), 0) AS share,
    any_value(m.op_name) AS op_name
FROM kernels k
LEFT JOIN main_op m ON m.rank = k.rank AND m.name = k.name AND m.stream_id IS NOT DISTINCT FROM k.stream_id
GROUP BY k.rank, k.name, k.stream_id
