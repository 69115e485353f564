WITH nccl AS (
    SELECT rank, capture, 'nccl' AS family, event_index,
           collective_type(coalesce(name, kernel_name)) AS collective_type,
           coalesce(name, collective_type(kernel_name)) AS name,
           group_name, group_seq, group_seq AS ordinal, dtype, element_bytes, in_nelems, out_nelems, group_size,
           timed_by, kernel_name, stream_id, start_ns, dur_ns
    FROM {{ ref('stg_collective_event') }}
), hccl AS (  -- Ascend: an HCCL op execution (hccl_info iter<N>.trace), from its first task's start to its last task's end
    SELECT rank, capture, 'hccl' AS family,
           row_number() OVER (PARTITION BY rank, capture ORDER BY min(start_ns), op_name, iteration) - 1 AS event_index,
           collective_type(any_value(op_type)) AS collective_type, op_name AS name,
           NULL::VARCHAR AS group_name, NULL::BIGINT AS group_seq, iteration AS ordinal, NULL::VARCHAR AS dtype, NULL::INTEGER AS element_bytes,
           NULL::BIGINT AS in_nelems, NULL::BIGINT AS out_nelems, NULL::BIGINT AS group_size,
           'hccl_tasks' AS timed_by, NULL::VARCHAR AS kernel_name, NULL::BIGINT AS stream_id,
           min(start_ns) AS start_ns, max(start_ns + dur_ns) - min(start_ns) AS dur_ns
    FROM {{ ref('int_comm_task') }}
    GROUP BY rank, capture, op_name, iteration
), both_families AS (
    SELECT * FROM nccl UNION ALL SELECT * FROM hccl
), sized AS (  -- nccl-tests' S (bytes) and bus factor per collective (shared/reference/gpu-analyses.md 3.1)
    SELECT *,
           CASE WHEN collective_type IN ('AllReduce', 'ReduceScatter', 'AllToAll', 'Broadcast', 'Reduce', 'SendRecv')
                     THEN in_nelems * element_bytes
                WHEN collective_type = 'AllGather' THEN out_nelems * element_bytes
                WHEN collective_type = 'Gather' THEN in_nelems * group_size * element_bytes
                WHEN collective_type = 'Scatter' THEN out_nelems * group_size * element_bytes END AS message_bytes,
           CASE WHEN collective_type = 'AllReduce' THEN 2.0 * (group_size - 1) / group_size
                WHEN collective_type IN ('ReduceScatter', 'AllGather', 'AllToAll', 'Gather', 'Scatter')
                     THEN 1.0 * (group_size - 1) / group_size
                WHEN collective_type IN ('Broadcast', 'Reduce', 'SendRecv') THEN 1.0 END AS bus_factor
    FROM both_families
)
SELECT rank, capture, family, event_index, collective_type, name, group_name, group_seq,
       -- the instance's number among the rank's collectives of its group and name: the group's Seq where the trace
       -- has it (HCCL: the execution), else the order of occurrence
       coalesce(ordinal, row_number() OVER (PARTITION BY rank, capture, family, group_name, name
                                             ORDER BY start_ns, event_index) - 1) AS occurrence,
       dtype, element_bytes, in_nelems, out_nelems, group_size, message_bytes, bus_factor,
       timed_by, kernel_name, stream_id, start_ns, dur_ns,
       CASE WHEN timed_by <> 'cpu_op' AND dur_ns > 0 THEN message_bytes / (dur_ns / 1e9) END
           AS algorithm_bandwidth_bytes_per_second,
       CASE WHEN timed_by <> 'cpu_op' AND dur_ns > 0 THEN message_bytes / (dur_ns / 1e9) * bus_factor END
           AS bus_bandwidth_bytes_per_second
FROM sized
