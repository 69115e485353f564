-- Why each GPU stream idled between its activities (kernels, memcpys, memsets; syncs are not work), two
-- definitions side by side (column definition):
-- * hta: HolisticTraceAnalysis' get_idle_time_breakdown over the activities HTA keeps (int_hta_gpu_event, µs):
--   in start order on the stream, a gap is the start less the previous activity's end (no running maximum: a
--   gap can be negative); host_wait when the runtime call that launched the activity started after the
--   previous activity ended, else kernel_wait when the gap is shorter than 30 µs (HTA's
--   consecutive_kernel_delay), else other. A stream's first activity has no gap.
-- * profpipe: every activity at ns precision; a gap is the start less the latest end of the stream's earlier
--   activities, and only a positive gap is idle time; the same three causes with the same 30 µs threshold.
WITH hta AS (
    SELECT rank, capture, stream_id, start_ns, end_ns, runtime_start_ns,
           lag(end_ns) OVER (PARTITION BY rank, capture, stream_id ORDER BY start_ns, end_ns) AS previous_end_ns
    FROM {{ ref('int_hta_gpu_event') }} WHERE kind IN ('kernel', 'memcpy', 'memset')
), ours AS (
    SELECT rank, capture, stream_id, start_ns, start_ns + dur_ns AS end_ns, call_start_ns AS runtime_start_ns,
           max(start_ns + dur_ns) OVER (PARTITION BY rank, capture, stream_id ORDER BY start_ns, dur_ns
                                       ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS previous_end_ns
    FROM {{ ref('int_launched_activity') }}
    WHERE kind IN ('kernel', 'memcpy', 'memset')
), gaps AS (
    SELECT 'hta' AS definition, rank, capture, stream_id, start_ns - previous_end_ns AS gap_ns,
           runtime_start_ns > previous_end_ns AS host_late
    FROM hta WHERE previous_end_ns IS NOT NULL
    UNION ALL
    SELECT 'profpipe', rank, capture, stream_id, start_ns - previous_end_ns, runtime_start_ns > previous_end_ns
    FROM ours WHERE start_ns > previous_end_ns
), labelled AS (
    SELECT *, CASE WHEN coalesce(host_late, false) THEN 'host_wait'
                   WHEN gap_ns < 30000 THEN 'kernel_wait' ELSE 'other' END AS category
    FROM gaps
), streams AS (
    SELECT DISTINCT 'hta' AS definition, rank, capture, stream_id FROM hta
    UNION
    SELECT DISTINCT 'profpipe', rank, capture, stream_id FROM ours
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
