-- msprof-analyze's slow-rank rule (cluster_slow_rank): a step phase whose largest and smallest value over the ranks
-- differ by more than the threshold share of the mean step total.
SELECT slow_rank AS rank, capture, max_step AS step, gap_ratio AS value, phase, max_rank, max_ns, min_rank, min_ns,
       mean_total_ns, ranks
FROM {{ ref('cluster_slow_rank') }}
WHERE ranks > 1 AND gap_ratio > {{ threshold }}
