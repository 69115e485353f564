WITH lane_names AS (  -- the process each lane is shown as (msprof's and MindInsight's names)
    SELECT rank, lane, process
    FROM (SELECT rank, bool_or(device_type = 'ascend') AS ascend FROM {{ ref('stg_run_info') }} GROUP BY rank)
         LEFT JOIN (SELECT rank, bool_and(algorithm = 'scope_name') AS scope_name  -- MindSpore <= 2.2's thread name
                    FROM {{ ref('int_scope_run') }} GROUP BY rank) USING (rank),
         (VALUES (0, 'Step Trace'), (1, 'Host'), (2, 'GPU ops'), (3, NULL), (4, 'HCCL'), (5, 'Overlap Analysis'),
                 (6, 'MindData'), (7, 'Memory'), (8, 'MindData get_next'), (9, NULL)) AS l(lane, label),
         LATERAL (SELECT coalesce(label, CASE WHEN lane = 9 THEN CASE WHEN scope_name THEN 'Scope Name' ELSE 'Scope Layer' END
                                              WHEN ascend THEN 'Ascend Hardware' ELSE 'GPU kernels' END) AS process)
), overlap_threads AS (
    SELECT * FROM (VALUES ('computation', 0, 'Computing'), ('communication', 1, 'Communication'),
                          ('pure_communication', 2, 'Communication(Not Overlapped)'), ('free', 3, 'Free'))
        AS t(category, tid, thread)
), overlap_stretches AS (  -- overlap_segment's stretches, each drawn once: where a step ends after the next one starts
                           -- (MindSpore GPU step traces) a stretch is in both steps; overlapping copies merge
    SELECT rank, capture, category, min(start_ns) AS start_ns, max(end_ns) - min(start_ns) AS dur_ns
    FROM (SELECT *, sum(opens::INT) OVER (PARTITION BY rank, capture, category ORDER BY start_ns, end_ns
                                          ROWS UNBOUNDED PRECEDING) AS run
          FROM (SELECT rank, capture, category, start_ns, end_ns,
                       coalesce(start_ns >= max(end_ns) OVER (PARTITION BY rank, capture, category ORDER BY start_ns, end_ns
                                                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), true) AS opens
                FROM {{ ref('overlap_segment') }}))
    GROUP BY rank, capture, category, run
), spans AS (
    SELECT rank, capture, 0 AS lane, 0 AS tid, 'iterations' AS thread, 'Step ' || step AS name, 'step' AS category,
           start_ns, total_ns AS dur_ns, {'fp_op': fp_op, 'bp_op': bp_op}::JSON AS args
    FROM {{ ref('step_phases') }}
    UNION ALL
    SELECT rank, capture, 0, 0, 'iterations', phase.name, 'step_phase', phase.start_ns, phase.dur_ns, NULL::JSON
    FROM {{ ref('step_phases') }}, unnest([
        {'name': 'iteration_interval', 'start_ns': start_ns, 'dur_ns': iteration_interval_ns},
        {'name': 'fp_and_bp', 'start_ns': fp_ns, 'dur_ns': fp_and_bp_ns},
        {'name': 'tail', 'start_ns': bp_ns, 'dur_ns': tail_ns}]) AS t(phase)
    WHERE phase.dur_ns IS NOT NULL
    UNION ALL
    SELECT rank, capture, CASE side WHEN 'Host' THEN 1 ELSE 2 END, coalesce(tid, 0),
           CASE side WHEN 'Host' THEN 'Thread ' || coalesce(tid, 0) ELSE 'Ops' END, op_name, 'op', start_ns, dur_ns,
           {'op_type': op_type}::JSON
    FROM {{ ref('stg_host_op') }}
    UNION ALL
    SELECT e.rank, e.capture, 3, coalesce(e.stream_id, 0), 'Stream ' || coalesce(e.stream_id, 0), e.name, e.kind,
           e.start_ns, e.dur_ns,
           json_object('op_name', e.op_name, 'stream', e.stream_id, 'correlation', e.correlation, 'grid', d.grid,
                       'block', d.block, 'registers_per_thread', d.registers_per_thread,
                       'shared_memory_bytes', d.shared_memory_bytes, 'bytes', d.bytes)
    FROM {{ ref('int_device_exec') }} e
    LEFT JOIN (SELECT rank, capture, correlation, start_ns, any_value(grid) AS grid, any_value(block) AS block,
                      any_value(registers_per_thread) AS registers_per_thread,
                      any_value(shared_memory_bytes) AS shared_memory_bytes, any_value(bytes) AS bytes
               FROM {{ ref('stg_device_exec') }} WHERE correlation IS NOT NULL GROUP BY ALL) d
        ON d.rank = e.rank AND d.capture = e.capture AND d.correlation = e.correlation AND d.start_ns = e.start_ns
    UNION ALL  -- a flow arrow from each runtime or driver call to the device activity it launched (Kineto's ac2g):
               -- its start on the call, its end on the activity (flow id: rank, capture and correlation id)
    SELECT l.rank, l.capture, flow.lane, flow.tid, flow.thread, 'launch', 'flow', flow.at_ns, NULL,
           {'id': (l.rank::HUGEINT * 1000 + l.capture) * 10000000000 + l.correlation, 'phase': flow.phase}::JSON
    FROM {{ ref('kernel_launch') }} l, unnest([
        {'lane': 1, 'tid': coalesce(l.tid, 0), 'thread': 'Thread ' || coalesce(l.tid, 0), 'at_ns': l.call_start_ns,
         'phase': 's'},
        {'lane': 3, 'tid': coalesce(l.stream_id, 0), 'thread': 'Stream ' || coalesce(l.stream_id, 0),
         'at_ns': l.start_ns, 'phase': 'f'}]) AS t(flow)
    UNION ALL  -- 70000: msprof's thread id for the communication op executions
    SELECT rank, capture, 4, 70000, 'Communication Kernel', op_label, 'communication', start_ns, end_ns - start_ns,
           {'op_name': op_name, 'iteration': iteration, 'communication_cost_ns': communication_cost_ns,
            'wait_cost_ns': wait_cost_ns}::JSON
    FROM {{ ref('comm_op_stats') }}
    UNION ALL
    SELECT rank, capture, 4, coalesce(plane, 0), 'Plane ' || coalesce(plane, 0), task_type, 'communication_task',
           start_ns, dur_ns,
           {'op_name': op_name, 'src_rank': src_rank, 'dst_rank': dst_rank, 'transport': transport, 'bytes': bytes}::JSON
    FROM {{ ref('int_comm_task') }}
    UNION ALL
    SELECT rank, capture, 5, tid, thread, category, 'overlap', start_ns, dur_ns, NULL::JSON
    FROM overlap_stretches JOIN overlap_threads USING (category)
    UNION ALL  -- MindData queue sizes: counters (dur NULL); op queues are sampled with the CPU monitor
    SELECT q.rank, q.capture, CASE q.queue WHEN 'get_next' THEN 8 ELSE 6 END, 0, 'Queues',
           CASE WHEN q.queue = 'op_output' THEN o.op_name || '(id=' || q.op_id || ') output queue'
                WHEN suffix(q.queue, 'queue') THEN replace(q.queue, '_', ' ')
                ELSE replace(q.queue, '_', ' ') || ' queue' END,
           'counter', coalesce(q.ts_ns, c.ts_ns), NULL, {'size': q.size}::JSON
    FROM {{ ref('stg_queue_sample') }} q
    LEFT JOIN {{ ref('data_op_stats') }} o ON o.rank = q.rank AND o.capture = q.capture AND o.op_id = q.op_id
    LEFT JOIN {{ ref('stg_data_cpu_sample') }} c
           ON q.queue = 'op_output' AND c.rank = q.rank AND c.capture = q.capture AND c.scope = 'device' AND c.sample = q.sample
    WHERE coalesce(q.ts_ns, c.ts_ns) IS NOT NULL
    UNION ALL  -- the flame graph: Python frames (with_stack) on their host thread, around the ops they ran
    SELECT rank, capture, 1, coalesce(tid, 0), 'Thread ' || coalesce(tid, 0), name, 'python_function', start_ns,
           dur_ns, {'frame_kind': frame_kind, 'depth': depth}::JSON
    FROM {{ ref('int_python_frame_path') }}
    UNION ALL  -- MindSpore's host info (profile_framework): its events on their host thread; an instant, or a start
               -- the profiler stopped inside, as a slice of no length
    SELECT rank, capture, 1, coalesce(tid, 0), 'Thread ' || coalesce(tid, 0),
           name || CASE kind WHEN 'open_start' THEN ' (no end)' ELSE '' END, 'host_event', start_ns, coalesce(dur_ns, 0),
           {'module': module, 'level': level, 'custom_info': nullif(custom_info, '')}::JSON
    FROM {{ ref('host_span') }}
    WHERE kind <> 'orphan_end'
    UNION ALL  -- runtime and driver calls on their host thread, with its ops (as Kineto draws them)
    SELECT rank, capture, 1, coalesce(tid, 0), 'Thread ' || coalesce(tid, 0), name, category, start_ns, dur_ns,
           {'correlation': correlation}::JSON
    FROM {{ ref('stg_host_api') }}
    UNION ALL
    SELECT rank, capture, 7, 0, 'Allocator',
           'Memory in use ' || device_type || CASE WHEN device_id >= 0 THEN ':' || device_id ELSE '' END,
           'counter', ts_ns, NULL, {'bytes': in_use_bytes}::JSON
    FROM {{ ref('int_memory_in_use') }}
    UNION ALL  -- the host process's resident memory (host info, profile_framework)
    SELECT rank, capture, 7, 0, 'Allocator', 'Host memory (VmRSS)', 'counter', ts_ns, NULL, {'bytes': memory_bytes}::JSON
    FROM {{ ref('host_memory_curve') }}
    WHERE ts_ns IS NOT NULL
    UNION ALL  -- memory components' and NPU modules' totals (memory_curve; its allocator rows are the ones above)
    SELECT rank, capture, 7, 0, 'Allocator', 'Memory ' || component || coalesce(' ' || device, '') || ' ' || m.measure,
           'counter', ts_ns, NULL, {'bytes': m.bytes}::JSON
    FROM {{ ref('memory_curve') }}, unnest([{'measure': 'allocated', 'bytes': allocated_bytes},
                                            {'measure': 'reserved', 'bytes': reserved_bytes},
                                            {'measure': 'active', 'bytes': active_bytes}]) AS t(m)
    WHERE kind <> 'allocator' AND m.bytes IS NOT NULL  -- of samples at one time, the last (the value after them)
    QUALIFY row_number() OVER (PARTITION BY rank, capture, component, device, m.measure, ts_ns ORDER BY seq DESC) = 1
    UNION ALL  -- memcpy / memset bandwidth per direction (memory_bandwidth_series: HTA's "Memcpy BW" counters)
    SELECT rank, capture, 7, 0, 'Allocator', 'Memory bandwidth ' || direction, 'counter', ts_ns, NULL,
           {'bytes_per_second': bytes_per_second}::JSON
    FROM {{ ref('memory_bandwidth_series') }}
    UNION ALL  -- MindSpore's scope timeline: a track per depth of the ops' scope paths (Scope Layer: its thread names)
    SELECT rank, capture, 9, depth, CASE algorithm WHEN 'scope_layer' THEN 'Thread ' ELSE 'Level ' END || depth, scope,
           'scope', start_ns, dur_ns, {'ops': ops}::JSON
    FROM {{ ref('scope_layer_span') }}
)
SELECT s.rank, s.capture, s.lane, n.process, s.tid, s.thread, s.name, s.category, s.start_ns, s.dur_ns, s.args,
       CASE s.lane WHEN 6 THEN 'minddata' WHEN 8 THEN 'get_next' ELSE 'main' END AS clock_domain
FROM spans s JOIN lane_names n USING (rank, lane)
