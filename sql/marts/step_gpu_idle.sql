-- Why each GPU stream idled within each step: profpipe's gaps of int_gpu_idle_gap (ns, after the latest earlier
-- end of the stream's work) clipped to the step's window on the device (int_step_device_window: a host step's GPU
-- window, where the GPU ran its work, which on an asynchronous GPU lies long after the host's step; a device-side
-- step trace's own window), summed per cause. A gap that
-- crosses a step boundary counts in each step for the part inside it, under the cause of the whole gap; the idle
-- time before a stream's first activity and after its last one in the trace is not a gap (HTA's rule).
WITH clipped AS (
    SELECT s.rank, s.capture, s.step, s.end_ns - s.start_ns AS step_ns, g.stream_id, g.category,
           least(g.gap_end_ns, s.end_ns) - greatest(g.gap_start_ns, s.start_ns) AS idle_ns
    FROM {{ ref('int_gpu_idle_gap') }} g
    JOIN {{ ref('int_step_device_window') }} s
      ON s.rank = g.rank AND s.capture = g.capture AND g.gap_start_ns < s.end_ns AND g.gap_end_ns > s.start_ns
    WHERE g.definition = 'profpipe'
), stats AS (
    SELECT rank, capture, step, step_ns, stream_id, category, count(*) AS gaps, sum(idle_ns)::BIGINT AS idle_ns
    FROM clipped GROUP BY ALL
), streams AS (
    SELECT DISTINCT rank, capture, step, step_ns, stream_id FROM stats
)
SELECT s.rank, s.capture, s.step, s.stream_id, c.category, coalesce(t.gaps, 0) AS gaps,
       coalesce(t.idle_ns, 0) AS idle_ns, coalesce(t.idle_ns, 0) / nullif(s.step_ns, 0) AS step_share
FROM streams s
CROSS JOIN (VALUES ('host_wait'), ('kernel_wait'), ('other')) AS c(category)
LEFT JOIN stats t ON t.rank = s.rank AND t.capture = s.capture AND t.step = s.step
                 AND t.stream_id IS NOT DISTINCT FROM s.stream_id AND t.category = c.category
