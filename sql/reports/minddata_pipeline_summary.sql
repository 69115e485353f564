-- MindSpore's summary, a dict of lists by op id (shared/reference/algorithms.md §4.4), one row per key; written
-- where the pipeline, its CPU samples and a device-queue / iterator trace all exist, as MindSpore does
WITH ranks AS (
    SELECT rank, capture FROM {{ ref('data_op_stats') }} GROUP BY ALL HAVING bool_or(cpu_samples > 0)
    INTERSECT
    SELECT rank, capture FROM {{ ref('data_batch_stats') }} WHERE trace IN ('device_queue', 'iterator')
), ops AS (
    SELECT s.*, round_like_python(as_percent(s.avg_cpus), 2) AS cpu_pct,
           round_like_python(s.queue_average_size, 2) AS average,
           count(s.cpu_samples) OVER (PARTITION BY s.rank, s.capture) AS cpu_ops,
           count(*) OVER (PARTITION BY s.rank, s.capture) AS op_count
    FROM {{ ref('data_op_stats') }} s JOIN ranks USING (rank, capture)
), per_op AS (
    SELECT rank, capture, any_value(cpu_ops) AS cpu_ops, any_value(op_count) AS op_count,
           to_json(list(op_id ORDER BY op_id)) AS op_ids,
           to_json(list(op_name ORDER BY op_id)) AS op_names,
           to_json(list(op_name || '(id=' || op_id || ')' ORDER BY op_id)) AS pipeline_ops,
           to_json(list(num_workers ORDER BY op_id)) AS num_workers,
           to_json(list(CASE WHEN queue_samples > 0 THEN to_json(average) ELSE '-1'::JSON END ORDER BY op_id))
               AS queue_average_size,
           to_json(list(CASE WHEN queue_samples > 0 AND queue_capacity <> 0
                             THEN to_json(round_like_python(100 * average / queue_capacity, 2)) ELSE '-1'::JSON END
                        ORDER BY op_id)) AS queue_utilization_pct,
           to_json(list(CASE WHEN queue_samples > 0
                             THEN to_json(round_like_python(100 * queue_empty_samples / queue_samples, 2))
                             ELSE '-1'::JSON END ORDER BY op_id)) AS queue_empty_freq_pct,
           to_json(list(coalesce(child_ids, []) ORDER BY op_id)) AS children_ids,
           to_json(list(coalesce(parent_id, -1) ORDER BY op_id)) AS parent_id,
           to_json(list(CASE WHEN num_workers <> 0 AND cpu_samples > 0
                             THEN to_json(round_like_python(cpu_pct / num_workers, 2)) ELSE '-1'::JSON END
                        ORDER BY op_id)) AS avg_cpu_pct_per_worker
    FROM ops GROUP BY rank, capture
), cpu_by_index AS (  -- MindSpore lists avg_cpu_pct for op ids 0 .. (ops with CPU samples) - 1
    SELECT p.rank, p.capture,
           to_json(list(coalesce(to_json(o.cpu_pct), '-1'::JSON) ORDER BY i.i)) AS avg_cpu_pct
    FROM per_op p CROSS JOIN LATERAL (SELECT unnest(range(p.cpu_ops)) AS i) i
    LEFT JOIN ops o ON o.rank = p.rank AND o.capture = p.capture AND o.op_id = i.i AND o.cpu_samples > 0
    GROUP BY p.rank, p.capture
), trace AS (  -- the device-queue trace, else the iterator's; MindSpore skips batch 1
    SELECT b.* FROM {{ ref('data_batch_stats') }} b JOIN ranks USING (rank, capture)
    WHERE b.batch >= 2 AND b.trace = (SELECT CASE WHEN bool_or(x.trace = 'device_queue') THEN 'device_queue' ELSE 'iterator' END
                                      FROM {{ ref('data_batch_stats') }} x WHERE x.rank = b.rank AND x.capture = b.capture)
), batch_times AS (  -- the iterator's batch time is averaged with the times between its queue records
    SELECT rank, capture, batch_ns / 1e6 AS ms FROM trace
    UNION ALL
    SELECT rank, capture, since_previous_ns / 1e6 FROM trace WHERE trace = 'iterator'
), times AS (
    SELECT r.rank, r.capture,
           (SELECT avg(pipeline_ns / 1e6) FROM trace t WHERE t.rank = r.rank AND t.capture = r.capture) AS pipeline_ms,
           (SELECT avg(push_ns / 1e6) FROM trace t WHERE t.rank = r.rank AND t.capture = r.capture) AS push_ms,
           (SELECT avg(ms) FROM batch_times t WHERE t.rank = r.rank AND t.capture = r.capture) AS batch_ms
    FROM ranks r
), findings AS (  -- MindSpore's analyzer, where its CPU rules ran (as many ops with CPU samples as ops)
    SELECT f.rank, f.capture,
           to_json(list(f.finding || ' ' || f.suggestion ORDER BY f.op_id, f.rule) FILTER (WHERE f.rule IN ('cpu_high', 'cpu_low')))
               AS cpu_analysis_details,
           to_json(list(f.finding || ' ' || f.suggestion ORDER BY f.op_id, f.rule)
                   FILTER (WHERE f.rule IN ('queue_leaf', 'queue_device', 'queue_internal'))) AS queue_analysis_details,
           to_json([arg_min(f.op, f.op_id) FILTER (WHERE f.rule = 'bottleneck')]) AS bottleneck_warning,
           to_json([arg_min(f.finding || ' ' || f.suggestion, f.op_id) FILTER (WHERE f.rule = 'bottleneck')])
               AS bottleneck_suggestion,
           bool_or(f.rule = 'bottleneck') AS has_bottleneck
    FROM {{ ref('data_findings') }} f WHERE f.analyzer = 'mindspore'
    GROUP BY f.rank, f.capture
), summary AS (
    SELECT p.*, c.avg_cpu_pct, t.pipeline_ms, t.push_ms, t.batch_ms, f.cpu_analysis_details, f.queue_analysis_details,
           f.bottleneck_warning, f.bottleneck_suggestion, f.has_bottleneck
    FROM per_op p JOIN cpu_by_index c USING (rank, capture) JOIN times t USING (rank, capture)
    LEFT JOIN findings f USING (rank, capture)
), entries AS (
    SELECT rank, capture, unnest([
        {'position': 1, 'key': 'op_ids', 'value': op_ids},
        {'position': 2, 'key': 'op_names', 'value': op_names},
        {'position': 3, 'key': 'pipeline_ops', 'value': pipeline_ops},
        {'position': 4, 'key': 'num_workers', 'value': num_workers},
        {'position': 5, 'key': 'queue_average_size', 'value': queue_average_size},
        {'position': 6, 'key': 'queue_utilization_pct', 'value': queue_utilization_pct},
        {'position': 7, 'key': 'queue_empty_freq_pct', 'value': queue_empty_freq_pct},
        {'position': 8, 'key': 'children_ids', 'value': children_ids},
        {'position': 9, 'key': 'parent_id', 'value': parent_id},
        {'position': 10, 'key': 'avg_cpu_pct', 'value': avg_cpu_pct},
        {'position': 11, 'key': 'per_pipeline_time', 'value': to_json([coalesce(to_json(round_like_python(pipeline_ms, 3)), '-1'::JSON)])},
        {'position': 12, 'key': 'per_push_queue_time', 'value': to_json([coalesce(to_json(round_like_python(push_ms, 3)), '-1'::JSON)])},
        {'position': 13, 'key': 'per_batch_time', 'value': to_json([coalesce(to_json(round_like_python(batch_ms, 3)), '-1'::JSON)])},
        -- the rest only where MindSpore's CPU rules ran
        {'position': 14, 'key': 'avg_cpu_pct_per_worker', 'value': CASE WHEN cpu_ops = op_count THEN avg_cpu_pct_per_worker END},
        {'position': 15, 'key': 'cpu_analysis_details', 'value': CASE WHEN cpu_ops = op_count THEN cpu_analysis_details END},
        {'position': 16, 'key': 'queue_analysis_details', 'value': CASE WHEN cpu_ops = op_count THEN queue_analysis_details END},
        {'position': 17, 'key': 'bottleneck_warning', 'value': CASE WHEN cpu_ops = op_count AND has_bottleneck THEN bottleneck_warning END},
        {'position': 18, 'key': 'bottleneck_suggestion', 'value': CASE WHEN cpu_ops = op_count AND has_bottleneck THEN bottleneck_suggestion END}
    ], recursive := true)
    FROM summary
)
SELECT rank, capture, position, key, value FROM entries WHERE value IS NOT NULL
