-- Why each GPU stream idled between its activities, two definitions side by side (column definition): the gaps
-- of int_gpu_idle_gap (HolisticTraceAnalysis' get_idle_time_breakdown, and profpipe's), summed per cause with
-- their interval statistics; every stream has a row for each of the three causes.
WITH labelled AS (
    SELECT * FROM {{ ref('int_gpu_idle_gap') }}
), streams AS (  -- every stream with work, gaps or not
    SELECT DISTINCT 'hta' AS definition, rank, capture, stream_id
    FROM {{ ref('int_hta_gpu_event') }} WHERE kind IN ('kernel', 'memcpy', 'memset')
    UNION
    SELECT DISTINCT 'profpipe', rank, capture, stream_id
    FROM {{ ref('int_launched_activity') }} WHERE kind IN ('kernel', 'memcpy', 'memset')
), stats AS (
    SELECT definition, rank, capture, stream_id, category, count(*) AS gaps, sum(gap_ns)::BIGINT AS idle_ns,
           avg(gap_ns) AS avg_ns, stddev_samp(gap_ns) AS stddev_ns, min(gap_ns) AS min_ns,
           quantile_cont(gap_ns, 0.25) AS p25_ns, quantile_cont(gap_ns, 0.5) AS median_ns,
           quantile_cont(gap_ns, 0.75) AS p75_ns, max(gap_ns) AS max_ns
    FROM labelled GROUP BY ALL
)
SELECT s.definition, s.rank, s.capture, s.stream_id, c.category,
       coalesce(t.gaps, 0) AS gaps, coalesce(t.idle_ns, 0) AS idle_ns,
       coalesce(t.idle_ns, 0) / nullif(sum(t.idle_ns) OVER (PARTITION BY s.definition, s.rank, s.capture, s.stream_id), 0)
           AS idle_share,
       t.avg_ns, t.stddev_ns, t.min_ns, t.p25_ns, t.median_ns, t.p75_ns, t.max_ns
FROM streams s
CROSS JOIN (VALUES ('host_wait'), ('kernel_wait'), ('other')) AS c(category)
LEFT JOIN stats t ON t.definition = s.definition AND t.rank = s.rank AND t.capture = s.capture
                 AND t.stream_id IS NOT DISTINCT FROM s.stream_id AND t.category = c.category
