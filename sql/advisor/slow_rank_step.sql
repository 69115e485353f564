-- Steps in which a rank is slower than the fastest rank of the same step by more than the threshold
-- (cluster_step_phases.slowdown), with the phases that tell where its time went; for the ranks and steps that only
-- the Ascend tools' own step trace holds (trimmed cluster ranks), cluster_step_trace's slowdown of its total
-- (computing + communication not overlapped + free).
SELECT rank, capture, step, slowdown AS value, total_ns, fastest_total_ns, slowest_rank, ranks,
       iteration_interval_ns, fp_and_bp_ns, tail_ns, pure_communication_ns
FROM {{ ref('cluster_step_phases') }}
WHERE ranks > 1 AND slowdown > {{ threshold }}
UNION ALL
SELECT rank, capture, step, slowdown, total_ns, fastest_total_ns, slowest_rank, ranks,
       NULL, NULL, NULL, communication_not_overlapped_ns
FROM {{ ref('cluster_step_trace') }} t
WHERE ranks > 1 AND slowdown > {{ threshold }}
  AND NOT EXISTS (SELECT 1 FROM {{ ref('cluster_step_phases') }} p
                  WHERE p.rank = t.rank AND p.capture = t.capture AND p.step IS NOT DISTINCT FROM t.step)
