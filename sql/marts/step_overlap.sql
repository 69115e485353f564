-- step_overlap: one row per step (rank, capture, step) split into computation, communication hidden by computation, pure communication and free time.
-- Columns:
--   rank, capture, step, start_ns, end_ns, total_ns (the step window of step_phases).
--   computation_ns: time inside the step during which at least one computing device execution runs.
--   communication_ns: time during which communication runs (see stg_overlap_segment for both).
--   overlapped_communication_ns: communication time during which something computes.
--   pure_communication_ns = communication_ns - overlapped_communication_ns (MindSpore's "pure communication").
--   free_ns = total_ns - time covered by computation or communication.
--   receive_alone_ns: pipeline-parallel Receive ops alone (nothing computes, no collective runs): the stage waits.
--   collective_alone_ns = pure_communication_ns - receive_alone_ns: collectives not hidden by computation.
--   stage_ns = total_ns - receive_alone_ns (MindSpore's stage time).
-- Ranks without device executions (a step trace alone) have no rows: their computation is unknown.
WITH covered AS (
    SELECT rank, capture, step,
           coalesce(sum(dur_ns) FILTER (WHERE category = 'computation'), 0)::BIGINT AS computation_ns,
           coalesce(sum(dur_ns) FILTER (WHERE category = 'communication'), 0)::BIGINT AS communication_ns,
           coalesce(sum(dur_ns) FILTER (WHERE category = 'pure_communication'), 0)::BIGINT AS pure_communication_ns,
           coalesce(sum(dur_ns) FILTER (WHERE category = 'free'), 0)::BIGINT AS free_ns,
           coalesce(sum(dur_ns) FILTER (WHERE category = 'receive_alone'), 0)::BIGINT AS receive_alone_ns,
           coalesce(sum(dur_ns) FILTER (WHERE category = 'collective_alone'), 0)::BIGINT AS collective_alone_ns
    FROM stg_overlap_segment
    GROUP BY rank, capture, step
)
SELECT s.rank, s.capture, s.step, s.start_ns, s.end_ns, s.end_ns - s.start_ns AS total_ns,
       c.computation_ns, c.communication_ns,
       c.communication_ns - c.pure_communication_ns AS overlapped_communication_ns,
       c.pure_communication_ns, c.free_ns, c.receive_alone_ns, c.collective_alone_ns,
       s.end_ns - s.start_ns - c.receive_alone_ns AS stage_ns
FROM step_phases s
JOIN covered c USING (rank, capture, step)
