-- step_overlap: one row per step (rank, step) split into computation, communication hidden by computation, pure communication and free time.
-- Columns:
--   rank, step, start_ns, end_ns, total_ns (the step window of step_phases).
--   computation_ns: time inside the step covered by at least one computing device execution (Ascend op tasks,
--     CUDA kernels, memcpy and memset; communication kernels and runtime sync tasks are not computation).
--   communication_ns: time covered by communication: the HCCL op executions (comm_op_stats) where the rank
--     has them, else the step trace's communication spans (step_communication).
--   overlapped_communication_ns: communication time during which something computes.
--   pure_communication_ns = communication_ns - overlapped_communication_ns (MindSpore's "pure communication").
--   free_ns = total_ns - time covered by computation or communication.
-- Intervals are merged (union) before measuring, so parallel streams are not counted twice. Ranks without
-- device executions (a step trace alone) have no rows: their computation is unknown.
WITH steps AS (  -- ranks with device executions only: without them computation is unknown
    SELECT rank, step, start_ns, end_ns FROM step_phases
    WHERE rank IN (SELECT DISTINCT rank FROM stg_device_exec)
), communication AS (
    SELECT rank, start_ns, end_ns FROM comm_op_stats
    UNION ALL
    SELECT rank, start_ns, end_ns FROM step_communication c
    WHERE NOT EXISTS (SELECT 1 FROM comm_op_stats o WHERE o.rank = c.rank)
), intervals AS (
    SELECT rank, 'computation' AS what, start_ns, end_ns
    FROM stg_device_exec
    WHERE kind IN ('task', 'kernel', 'memcpy', 'memset')
      AND NOT regexp_matches(name, '(?i)nccl|hcom_|AllReduce|AllGather|ReduceScatter|Broadcast|AllToAll|Send-op|Receive-op')
    UNION ALL
    SELECT rank, 'communication', start_ns, end_ns FROM communication
), clipped AS (
    SELECT s.rank, s.step, i.what, greatest(i.start_ns, s.start_ns) AS start_ns, least(i.end_ns, s.end_ns) AS end_ns
    FROM intervals i
    JOIN steps s ON i.rank = s.rank AND i.start_ns < s.end_ns AND i.end_ns > s.start_ns
), sets AS (
    SELECT rank, step, what AS covered_by, start_ns, end_ns FROM clipped
    UNION ALL
    SELECT rank, step, 'either', start_ns, end_ns FROM clipped
), ordered AS (
    SELECT *, max(end_ns) OVER (PARTITION BY rank, step, covered_by ORDER BY start_ns, end_ns
                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS previous_end
    FROM sets
), islands AS (
    SELECT *, sum(CASE WHEN previous_end IS NULL OR start_ns > previous_end THEN 1 ELSE 0 END)
                  OVER (PARTITION BY rank, step, covered_by ORDER BY start_ns, end_ns ROWS UNBOUNDED PRECEDING) AS island
    FROM ordered
), covered AS (
    SELECT rank, step, covered_by, sum(island_end - island_start)::BIGINT AS covered_ns
    FROM (SELECT rank, step, covered_by, island, min(start_ns) AS island_start, max(end_ns) AS island_end
          FROM islands GROUP BY rank, step, covered_by, island)
    GROUP BY rank, step, covered_by
), pivoted AS (
    SELECT rank, step,
           coalesce(max(covered_ns) FILTER (WHERE covered_by = 'computation'), 0) AS computation_ns,
           coalesce(max(covered_ns) FILTER (WHERE covered_by = 'communication'), 0) AS communication_ns,
           coalesce(max(covered_ns) FILTER (WHERE covered_by = 'either'), 0) AS either_ns
    FROM covered GROUP BY rank, step
)
SELECT
    s.rank, s.step, s.start_ns, s.end_ns, s.end_ns - s.start_ns AS total_ns,
    coalesce(p.computation_ns, 0) AS computation_ns,
    coalesce(p.communication_ns, 0) AS communication_ns,
    coalesce(p.computation_ns + p.communication_ns - p.either_ns, 0) AS overlapped_communication_ns,
    coalesce(p.either_ns - p.computation_ns, 0) AS pure_communication_ns,
    s.end_ns - s.start_ns - coalesce(p.either_ns, 0) AS free_ns
FROM steps s
LEFT JOIN pivoted p USING (rank, step)
