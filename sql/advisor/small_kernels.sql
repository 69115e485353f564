-- Ranks whose kernel executions are mostly of kernels averaging under 10 µs (kernel_stats.avg_ns), with those
-- kernels' share of the rank's kernel time.
SELECT rank, NULL::INTEGER AS capture, NULL::BIGINT AS step,
       sum(instances) FILTER (WHERE avg_ns < 10000) / sum(instances) AS value,
       sum(instances) FILTER (WHERE avg_ns < 10000) AS small_instances, sum(instances) AS instances,
       coalesce(sum(total_ns) FILTER (WHERE avg_ns < 10000), 0) / sum(total_ns) AS small_time_share
FROM {{ ref('kernel_stats') }}
GROUP BY rank
HAVING sum(instances) > 0 AND sum(total_ns) > 0
   AND sum(instances) FILTER (WHERE avg_ns < 10000) / sum(instances) > {{ threshold }}
