-- Times in µs from the rank's first AI Core task or AI CPU run, as MindSpore computes them: task ms, step-trace
-- communication points in 10 ns ticks, AI CPU whole µs.
WITH ops AS (
    SELECT s.rank, s.op_name, s.short_name,
           CASE WHEN s.op_type IS NOT NULL THEN
               ',"args":' || left(to_json({'type': s.op_type, 'fullname': s.op_name}), -1)
               || coalesce(',' || nullif(f.tensors_json[2:-2], ''), '') || '}}' END AS args
    FROM {{ ref('device_op_stats') }} s
    LEFT JOIN (SELECT rank, op_name, any_value(tensors_json) AS tensors_json
               FROM {{ ref('ascend_framework_task') }} GROUP BY rank, op_name) f USING (rank, op_name)
), tasks AS (
    SELECT e.rank, e.seq, e.op_name, p.short_name, p.args, e.stream_id, e.start_ns, e.dur_ns
    FROM {{ ref('ascend_task_exec') }} e JOIN ops p USING (rank, op_name)
), origin AS (
    SELECT r.rank, r.device_id, 1e9 / r.tick_hz AS tick,
           least((SELECT min(start_ns) FROM tasks t WHERE t.rank = r.rank) / 1e6,
                 (SELECT min(run_start_ns) // 1000 FROM {{ ref('aicpu_op_exec') }} a WHERE a.rank = r.rank) / 1e3)
               AS min_ms
    FROM {{ ref('ascend_rank') }} r
), events AS (
    SELECT rank, device_id, 0 AS lane, seq, device_id AS pid, stream_id AS tid, op_name, short_name AS name,
           short_name AS legacy_name,
           (start_ns / 1e6 - min_ms) * 1000 AS ts, dur_ns / 1e6 * 1000 AS dur, args
    FROM tasks JOIN origin USING (rank)
    UNION ALL
    SELECT rank, device_id, 1, row_number() OVER (PARTITION BY rank ORDER BY capture, step, stream_id, pair), 10000,
           stream_id, op_name, 'stream_' || stream_id || '_' || pair || '_' || op_label,
           'stream_' || stream_id || '_parallel_' || pair,
           (round(start_ns / tick) / 1e5 - min_ms) * 1000, round(dur_ns / tick) / 1e5 * 1000, NULL
    FROM {{ ref('step_communication') }} JOIN origin USING (rank)
    UNION ALL
    SELECT rank, device_id, 2, seq, 9000, 0, op_name, op_type, op_type, (run_start_ns // 1000 / 1e3 - min_ms) * 1000,
           ((run_end_ns - run_start_ns) // 1000)::DOUBLE, NULL
    FROM {{ ref('aicpu_op_exec') }} JOIN origin USING (rank)
)
SELECT rank, device_id, lane, seq, pid, tid, op_name, name, ts, dur,
       CASE WHEN args IS NULL THEN plain ELSE left(plain, -1) || args END AS event,
       CASE WHEN args IS NULL THEN legacy_plain ELSE left(legacy_plain, -1) || args END AS legacy_event
FROM (SELECT *, to_json({'name': name, 'ph': 'X', 'tid': tid, 'ts': ts, 'dur': dur, 'pid': pid})::VARCHAR AS plain,
             to_json({'name': legacy_name, 'ph': 'X', 'tid': tid, 'ts': ts, 'dur': dur, 'pid': pid})::VARCHAR
                 AS legacy_plain
      FROM events)
