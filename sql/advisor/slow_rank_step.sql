-- Steps in which a rank is slower than the fastest rank of the same step by more than the threshold
-- (cluster_step_phases.slowdown), with the phases that tell where its time went.
SELECT rank, capture, step, slowdown AS value, total_ns, fastest_total_ns, slowest_rank, ranks,
       iteration_interval_ns, fp_and_bp_ns, tail_ns, pure_communication_ns
FROM {{ ref('cluster_step_phases') }}
WHERE ranks > 1 AND slowdown > {{ threshold }}
