-- msprof-analyze's cluster_step_trace_time: the Ascend tools' own step trace of every rank (ascend_step_summary,
-- also on trimmed ranks), beside the other ranks' same step of the same capture.
WITH steps AS (
    SELECT rank, capture, step, device_id, origin, computing_ns, communication_not_overlapped_ns, overlapped_ns,
           communication_ns, free_ns, stage_ns, bubble_ns, communication_not_overlapped_exclude_receive_ns, preparing_ns,
           computing_ns + communication_not_overlapped_ns + free_ns AS total_ns
    FROM {{ ref('stg_ascend_step_summary') }}
), per_step AS (
    SELECT capture, step, count(*) AS ranks, min(total_ns) AS fastest_total_ns, max(total_ns) AS slowest_total_ns,
           arg_max(rank, (total_ns, -rank)) AS slowest_rank
    FROM steps GROUP BY capture, step
)
SELECT s.rank, s.capture, s.step, s.device_id, s.origin, s.computing_ns, s.communication_not_overlapped_ns,
       s.overlapped_ns, s.communication_ns, s.free_ns, s.stage_ns, s.bubble_ns,
       s.communication_not_overlapped_exclude_receive_ns, s.preparing_ns, s.total_ns,
       p.ranks, p.fastest_total_ns, p.slowest_total_ns, p.slowest_rank,
       s.total_ns / nullif(p.fastest_total_ns, 0) - 1 AS slowdown
FROM steps s JOIN per_step p ON p.capture = s.capture AND p.step IS NOT DISTINCT FROM s.step
