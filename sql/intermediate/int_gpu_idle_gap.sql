-- Each idle gap of a GPU stream between its activities (kernels, memcpys, memsets; syncs are not work), with its
-- cause, in two definitions (column definition):
-- * hta: HolisticTraceAnalysis' get_idle_time_breakdown over the activities HTA keeps (int_hta_gpu_event, µs):
--   in start order on the stream, a gap is the start less the previous activity's end (no running maximum); a
--   stream's first activity has no gap. Where two activities overlap on a stream, HTA counts the negative gap as
--   idle time (a negative idle time and share); here it is no gap: an idle time cannot be negative.
-- * profpipe: every activity at ns precision; a gap is the start less the latest end of the stream's earlier
--   activities, and only a positive gap is idle time.
-- Causes, both: host_wait when the runtime call that launched the next activity started after the previous
-- activity ended, else kernel_wait when the gap is shorter than 30 µs (HTA's consecutive_kernel_delay), else other.
WITH hta AS (
    SELECT rank, capture, stream_id, start_ns, end_ns, runtime_start_ns,
           lag(end_ns) OVER (PARTITION BY rank, capture, stream_id ORDER BY start_ns, end_ns) AS previous_end_ns
    FROM {{ ref('int_hta_gpu_event') }} WHERE kind IN ('kernel', 'memcpy', 'memset')
), ours AS (
    SELECT rank, capture, stream_id, start_ns, call_start_ns AS runtime_start_ns,
           max(start_ns + dur_ns) OVER (PARTITION BY rank, capture, stream_id ORDER BY start_ns, dur_ns
                                       ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS previous_end_ns
    FROM {{ ref('int_launched_activity') }}
    WHERE kind IN ('kernel', 'memcpy', 'memset')
), gaps AS (
    SELECT 'hta' AS definition, rank, capture, stream_id, previous_end_ns AS gap_start_ns, start_ns AS gap_end_ns,
           runtime_start_ns > previous_end_ns AS host_late
    FROM hta WHERE start_ns >= previous_end_ns
    UNION ALL
    SELECT 'profpipe', rank, capture, stream_id, previous_end_ns, start_ns, runtime_start_ns > previous_end_ns
    FROM ours WHERE start_ns > previous_end_ns
)
SELECT definition, rank, capture, stream_id, gap_start_ns, gap_end_ns, gap_end_ns - gap_start_ns AS gap_ns,
       CASE WHEN coalesce(host_late, false) THEN 'host_wait'
            WHEN gap_end_ns - gap_start_ns < 30000 THEN 'kernel_wait' ELSE 'other' END AS category
FROM gaps
