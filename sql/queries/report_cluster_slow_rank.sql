-- Report, step trace page: per phase of the cluster's step trace (cluster_slow_rank), the ranks' largest and
-- smallest value, ms, the gap between them as a share of the mean step, and the rank msprof-analyze's slow-rank rule
-- names.
SELECT capture, phase, ranks, max_ns / 1e6 AS max_ms, max_rank, min_ns / 1e6 AS min_ms, min_rank, gap_ratio,
       slow_rank, is_slow
FROM cluster_slow_rank
ORDER BY capture, is_slow DESC, gap_ratio DESC NULLS LAST, phase
