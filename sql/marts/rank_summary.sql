WITH described AS (  -- one source describes the rank: its first capture's device source
    SELECT DISTINCT ON (rank) rank, device_type, layout,
           try_cast(metadata_json->>'$.model_id' AS INTEGER) AS model_id,
           try_cast(metadata_json->'$.models' AS INTEGER[]) AS models
    FROM {{ ref('stg_run_info') }}
    ORDER BY rank, capture, device_type = 'cpu', layout
), host_ops AS (
    SELECT rank, count(*) AS host_ops FROM {{ ref('stg_host_op') }} GROUP BY rank
), device_execs AS (
    SELECT rank, count(*) AS device_execs FROM {{ ref('stg_device_exec') }} GROUP BY rank
), steps AS (
    SELECT rank, count(*) AS steps, avg(total_ns) AS avg_total_ns, avg(iteration_interval_ns) AS avg_iteration_interval_ns,
           avg(fp_and_bp_ns) AS avg_fp_and_bp_ns, avg(tail_ns) AS avg_tail_ns
    FROM {{ ref('step_phases') }} GROUP BY rank
), input_logs AS (  -- ranks with MindData logs
    SELECT rank FROM {{ ref('stg_data_op') }} UNION SELECT rank FROM {{ ref('stg_data_batch_time') }}
), input_wait AS (
    SELECT rank, count(wait_share) AS input_steps_measured, any_value(wait_source) AS input_wait_source,
           avg(wait_share) AS avg_input_wait_share
    FROM {{ ref('step_input_wait') }} GROUP BY rank
)
SELECT d.rank, d.device_type, d.layout, d.model_id, d.models,
       coalesce(h.host_ops, 0) AS host_ops, coalesce(e.device_execs, 0) AS device_execs,
       coalesce(s.steps, 0) AS steps, s.avg_total_ns, s.avg_iteration_interval_ns, s.avg_fp_and_bp_ns, s.avg_tail_ns,
       l.rank IS NOT NULL AS input_logs,
       CASE WHEN l.rank IS NOT NULL THEN coalesce(w.input_steps_measured, 0) END AS input_steps_measured,
       w.input_wait_source, w.avg_input_wait_share,
       CASE WHEN w.avg_input_wait_share > 0.2 THEN 'highly' WHEN w.avg_input_wait_share >= 0.05 THEN 'moderately'
            WHEN w.avg_input_wait_share IS NOT NULL THEN 'no' END AS input_bound
FROM described d
LEFT JOIN host_ops h USING (rank)
LEFT JOIN device_execs e USING (rank)
LEFT JOIN steps s USING (rank)
LEFT JOIN input_logs l USING (rank)
LEFT JOIN input_wait w USING (rank)
