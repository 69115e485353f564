WITH ops AS (
    SELECT *, op_name || '(id=' || op_id || ')' AS op,
           -- MindSpore's rules compare its percents rounded to 2 decimals (utilization from the rounded average);
           -- the rules below compare and print them, the value and threshold columns are fractions (/ 100)
           round_like_python(100 * round_like_python(queue_average_size, 2) / queue_capacity, 2) AS out_q,
           round_like_python(100.0 * queue_empty_samples / queue_samples, 2) AS empty_q,
           round_like_python(round_like_python(as_percent(avg_cpus), 2) / nullif(num_workers, 0), 2) AS worker_cpu,
           op_name IN ('Barrier', 'Concat', 'EpochCtrl', 'Rename', 'Repeat', 'Shuffle', 'Skip', 'Take', 'Zip')
               AS single_threaded
    FROM {{ ref('data_op_stats') }}
), cpu_ranks AS (  -- ranks where MindSpore's CPU rules run: as many ops in the CPU file as in the pipeline
    SELECT rank, capture FROM ops GROUP BY rank, capture
    HAVING count(*) = (SELECT count(DISTINCT op_id) FROM {{ ref('stg_data_cpu_sample') }} c
                       WHERE c.rank = ops.rank AND c.capture = ops.capture AND c.scope = 'op' AND c.op_id >= 0)
), rated AS (
    SELECT o.*, i.op AS input_op, i.out_q AS in_q, i.empty_q AS input_empty_q, (o.rank, o.capture) IN (SELECT (rank, capture) FROM cpu_ranks) AS cpu_rules
    FROM ops o LEFT JOIN ops i ON i.rank = o.rank AND i.capture = o.capture AND i.op_id = o.input_op_id
), mindspore AS (
    SELECT rank, capture, 'cpu_high' AS rule, op_id, op, worker_cpu / 100 AS value, 0.75 AS threshold,
           op || ' is using ' || worker_cpu || '% CPU per worker.' AS finding,
           'Setting num_parallel_workers>' || num_workers || ' might bring extra performance.' AS suggestion
    FROM rated WHERE cpu_rules AND NOT single_threaded AND worker_cpu > 75
    UNION ALL
    SELECT rank, capture, 'cpu_low', op_id, op, worker_cpu / 100, 0.2, op || ' is using ' || worker_cpu || '% CPU per worker.',
           'Using num_parallel_workers=' || num_workers || ' might not bring as much benefit due to low CPU usage per worker.'
    FROM rated WHERE cpu_rules AND NOT single_threaded AND worker_cpu < 20 AND num_workers > 1
    UNION ALL
    SELECT rank, capture, 'queue_leaf', op_id, op, out_q / 100, 0.5, 'Leaf op ' || op || ' is using ' || out_q || '% of its output queue.',
           'Setting num_parallel_workers>' || num_workers || ' might speed up I/O.'
    FROM rated WHERE NOT single_threaded AND op_name <> 'Batch' AND input_op_id IS NULL AND out_q <= 50
    UNION ALL
    SELECT rank, capture, 'queue_device', op_id, op, input_empty_q / 100, 0.6,
           op || '''s input queue is empty ' || input_empty_q || '% of the time. This might indicate dataset bottlenecks.',
           'Hence host cannot keep up with the device ' || input_empty_q || '% of the time. Device waits whenever input queue is empty.'
    FROM rated WHERE op_name = 'DeviceQueue' AND input_empty_q > 60
    UNION ALL
    SELECT rank, capture, 'queue_internal', op_id, op, (in_q - out_q) / 100, 0.5,
           op || '''s input queue usage=' || in_q || '% is greater than output queue usage=' || out_q || '%. This '
               || 'indicates child op ' || input_op || ' might be producing faster than its parent ' || op || ' can consume.',
           'If this op has low CPU utilization, try increasing prefetch_size or increasing num_workers.'
    FROM rated WHERE NOT single_threaded AND op_name NOT IN ('Batch', 'DeviceQueue') AND in_q - out_q > 50
    UNION ALL
    SELECT rank, capture, 'bottleneck', op_id, op, worker_cpu / 100, CASE WHEN worker_cpu > 75 THEN 0.75 ELSE 0.2 END,
           CASE WHEN worker_cpu > 75 THEN op || ' is using ' || worker_cpu || '% CPU per worker.'
                ELSE op || ' has low CPU utilization per worker of ' || worker_cpu || '% and abnormal queue usage.' END,
           CASE WHEN worker_cpu > 75 THEN 'Setting num_parallel_workers>' || num_workers || ' might bring extra performance.'
                ELSE 'Try increasing prefetch_size.' END
    FROM (SELECT *, row_number() OVER (PARTITION BY rank, capture ORDER BY op_id) AS closest
          FROM rated
          WHERE cpu_rules AND NOT single_threaded AND op_name <> 'DeviceQueue'
            AND (worker_cpu > 75 OR (worker_cpu < 20 AND input_op_id IS NOT NULL AND (in_q < 10 OR out_q - in_q > 50))))
    WHERE closest = 1
    UNION ALL
    SELECT rank, capture, 'rules_skipped', NULL, NULL, NULL, NULL,
           'The CPU file lists ' || (SELECT count(DISTINCT op_id) FROM {{ ref('stg_data_cpu_sample') }} c
                                     WHERE c.rank = o.rank AND c.capture = o.capture AND c.scope = 'op' AND c.op_id >= 0)
               || ' ops, the pipeline ' || count(*) || ': MindSpore''s CPU rules and single bottleneck were not run.',
           'Profile the pipeline and its CPU usage in the same run.'
    FROM ops o WHERE (rank, capture) NOT IN (SELECT (rank, capture) FROM cpu_ranks)
                 AND (rank, capture) IN (SELECT (rank, capture) FROM {{ ref('stg_data_cpu_sample') }})
    GROUP BY rank, capture
), stages AS (  -- profpipe: how much fuller each op's input queue is than its output queue (a source reads from storage: full)
    SELECT *, coalesce(in_q_raw, 1) - queue_usage_share AS queue_drop,
           row_number() OVER (PARTITION BY rank, capture ORDER BY coalesce(in_q_raw, 1) - queue_usage_share DESC, op_id) AS rank_in_drop
    FROM (SELECT o.*, i.queue_usage_share AS in_q_raw FROM ops o LEFT JOIN ops i ON i.rank = o.rank AND i.capture = o.capture AND i.op_id = o.input_op_id)
    WHERE queue_samples > 0 AND pipeline_order IS NOT NULL AND (input_op_id IS NULL OR in_q_raw IS NOT NULL)
), tree AS (  -- MindInsight's queue-usage rule on the pipeline tree, root ignored
    SELECT o.rank, o.capture, o.op_id, o.op, o.queue_usage_share AS usage, o.pipeline_parent_id IS NULL AS is_root,
           NOT EXISTS (SELECT 1 FROM ops c WHERE c.rank = o.rank AND c.capture = o.capture AND c.pipeline_parent_id = o.op_id) AS is_leaf,
           (SELECT max(c.queue_usage_share) FROM ops c WHERE c.rank = o.rank AND c.capture = o.capture AND c.pipeline_parent_id = o.op_id) AS max_child_usage
    FROM ops o WHERE o.pipeline_order IS NOT NULL
), fast_ranks AS (
    SELECT rank, capture FROM tree WHERE NOT is_root GROUP BY rank, capture HAVING bool_and(coalesce(usage, 0) >= 0.8)
), mindinsight_queue AS (
    SELECT rank, capture, 'queue_usage' AS rule, op_id, op, usage AS value, NULL::DOUBLE AS threshold,
           'Every op''s output queue is at least 80% full: the pipeline keeps up, the consumer of ' || op || ' is slower.' AS finding,
           'Data processing is not the bottleneck; look at the training step.' AS suggestion
    FROM tree WHERE is_root AND (rank, capture) IN (SELECT (rank, capture) FROM fast_ranks)
    UNION ALL
    SELECT rank, capture, 'queue_usage', op_id, op, usage, 0.1,
           op || '''s output queue is ' || round(100 * usage, 2) || '% full, a child''s is ' || round(100 * max_child_usage, 2)
               || '%: ' || op || ' consumes slower than its input is produced.',
           'Increase num_parallel_workers of ' || op || ' or simplify its work.'
    FROM tree WHERE NOT is_root AND NOT is_leaf AND max_child_usage - usage > 0.1 AND (rank, capture) NOT IN (SELECT (rank, capture) FROM fast_ranks)
    UNION ALL
    SELECT rank, capture, 'queue_usage', op_id, op, usage, 0.6,
           'Leaf op ' || op || '''s output queue is only ' || round(100 * usage, 2) || '% full: reading the data is slow.',
           'Increase num_parallel_workers of ' || op || ' or use faster storage / a lighter format.'
    FROM tree WHERE NOT is_root AND is_leaf AND usage < 0.6 AND (rank, capture) NOT IN (SELECT (rank, capture) FROM fast_ranks)
), device_status AS (  -- the host queue (device_queue trace preferred, else the iterator) and the get_next queue
    SELECT r.rank, r.capture, coalesce(d.empty_batches, i.empty_batches) AS empty, coalesce(d.batches, i.batches) AS batches,
           coalesce(g.batches, 0) AS get_next_batches, coalesce(g.empty_batches, 0) AS get_next_empty
    FROM (SELECT DISTINCT rank, capture FROM {{ ref('data_queue_stats') }}) r
    LEFT JOIN {{ ref('data_queue_stats') }} d ON d.rank = r.rank AND d.capture = r.capture AND d.queue = 'device_queue'
    LEFT JOIN {{ ref('data_queue_stats') }} i ON i.rank = r.rank AND i.capture = r.capture AND i.queue = 'iterator'
    LEFT JOIN {{ ref('data_queue_stats') }} g ON g.rank = r.rank AND g.capture = r.capture AND g.queue = 'get_next'
), profpipe AS (
    SELECT rank, capture, 'slowest_op' AS rule, op_id, op, queue_drop AS value, 0.5 AS threshold,
           CASE WHEN input_op_id IS NULL
                THEN 'Source op ' || op || ' is the slowest stage: its output queue is only ' || round(as_percent(queue_usage_share), 1)
                     || '% full while the ops above it wait for data.'
                ELSE op || ' is the slowest stage: its input queue is ' || round(as_percent(in_q_raw), 1) || '% full, its output queue only '
                     || round(as_percent(queue_usage_share), 1) || '% (data piles up before it).' END
               || coalesce(' CPU per worker: ' || round(as_percent(avg_cpus_per_worker), 1) || '%.', '')
               || coalesce(CASE WHEN d.empty > 0.3 * d.batches
                                THEN ' It holds training back: the host queue was empty for ' || d.empty || ' of ' || d.batches || ' batches.'
                                ELSE ' It does not hold training back now: the host queue was empty for only ' || d.empty || ' of '
                                     || d.batches || ' batches.' END, '') AS finding,
           CASE WHEN avg_cpus_per_worker > 0.75 OR avg_cpus_per_worker IS NULL
                THEN 'Raise its num_parallel_workers (now ' || num_workers || ') or make its work cheaper.'
                ELSE 'Its workers are mostly idle: it waits on I/O, sleeps or holds the Python GIL; try '
                     || 'python_multiprocessing=True, faster storage or caching the data, then more workers.' END AS suggestion
    FROM stages LEFT JOIN device_status d USING (rank, capture)
    WHERE rank_in_drop = 1 AND queue_drop > 0.5
), mindinsight_device AS (
    SELECT rank, capture, 'device_queue' AS rule, NULL::BIGINT AS op_id, NULL AS op, empty / batches AS value, 0.3 AS threshold,
           CASE WHEN empty > 0.3 * batches
                THEN 'The host queue was empty for ' || empty || ' of ' || batches || ' batches (' || ceil(100.0 * empty / batches)
                     || '% > 30%): data processing on the host is the bottleneck.'
                WHEN get_next_empty > 0
                THEN 'The host queue was rarely empty, but the device''s get_next queue was empty for ' || get_next_empty || ' of '
                     || get_next_batches || ' steps (' || ceil(100.0 * get_next_empty / get_next_batches) || '%): data transmission to the device is the bottleneck.'
                ELSE 'The host queue was empty for ' || empty || ' of ' || batches || ' batches (' || ceil(100.0 * empty / batches)
                     || '% <= 30%)' || CASE WHEN get_next_batches > 0 THEN ' and the get_next queue never' ELSE '' END
                     || ': data is not the bottleneck.' END AS finding,
           CASE WHEN empty > 0.3 * batches THEN 'Speed up the pipeline: see the op findings (workers, slow map functions).'
                WHEN get_next_empty > 0 THEN 'Check host-to-device transfer (sink size, queue capacity, data size per batch).'
                ELSE 'Look at the training step itself.' END AS suggestion
    FROM device_status WHERE batches > 0
), mindinsight_cpu AS (  -- MindInsight's CPU proposer: the host's average CPU use over the MindData samples
    SELECT rank, capture, 'cpu_usage' AS rule, NULL::BIGINT AS op_id, NULL AS op, avg(coalesce(user_share, 0) + coalesce(sys_share, 0)) AS value,
           0.8 AS threshold,
           'The host CPU was ' || round(as_percent(avg(coalesce(user_share, 0) + coalesce(sys_share, 0))), 1)
               || '% busy on average (over 80%) while the pipeline ran.' AS finding,
           'CPU-heavy data processing competes for cores: lower num_parallel_workers of cheap ops, move work off '
               || 'the host (e.g. to the device) or use a larger host.' AS suggestion
    FROM {{ ref('stg_data_cpu_sample') }} WHERE scope = 'device' AND user_share IS NOT NULL
    GROUP BY rank, capture HAVING avg(coalesce(user_share, 0) + coalesce(sys_share, 0)) > 0.8
)
SELECT rank, capture, 'mindspore' AS analyzer, rule, op_id, op, value, threshold, finding, suggestion FROM mindspore
UNION ALL
SELECT rank, capture, 'profpipe', rule, op_id, op, value, threshold, finding, suggestion FROM profpipe
UNION ALL
SELECT rank, capture, 'mindinsight', rule, op_id, op, value, threshold, finding, suggestion FROM mindinsight_queue
UNION ALL
SELECT rank, capture, 'mindinsight', rule, op_id, op, value, threshold, finding, suggestion FROM mindinsight_device
UNION ALL
SELECT rank, capture, 'mindinsight', rule, op_id, op, value, threshold, finding, suggestion FROM mindinsight_cpu
ORDER BY rank, capture, analyzer, rule, op_id
