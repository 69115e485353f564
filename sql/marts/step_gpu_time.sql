WITH steps AS (
    SELECT p.rank, p.capture, p.step, p.start_ns, p.end_ns, p.total_ns, p.fp_ns, p.bp_ns
    FROM {{ ref('step_phases') }} p WHERE (p.rank, p.capture) IN (SELECT (rank, capture) FROM {{ ref('stg_run_info') }} WHERE device_type = 'gpu')
), work AS (
    SELECT rank, capture, kind, name, start_ns, dur_ns, call_start_ns AS launched_ns,
           coalesce(call_start_ns, start_ns) AS placed_ns
    FROM {{ ref('int_launched_activity') }} WHERE kind IN ('kernel', 'memcpy', 'memset')
), placed AS (  -- the step whose window holds the launch (an ASOF join: one step per activity)
    SELECT s.step, w.*
    FROM work w ASOF JOIN steps s ON s.rank = w.rank AND s.capture = w.capture AND w.placed_ns >= s.start_ns
    WHERE w.placed_ns < s.end_ns
), device AS (
    SELECT rank, capture, step,
           coalesce(sum(dur_ns) FILTER (WHERE kind = 'kernel' AND NOT regexp_matches(name, '(?i)nccl')), 0) AS compute_ns,
           coalesce(sum(dur_ns) FILTER (WHERE kind = 'kernel' AND regexp_matches(name, '(?i)nccl')), 0) AS communication_ns,
           coalesce(sum(dur_ns) FILTER (WHERE kind = 'memcpy'), 0) AS memcpy_ns,
           coalesce(sum(dur_ns) FILTER (WHERE kind = 'memset'), 0) AS memset_ns,
           count(*) AS kernels,
           avg(start_ns - launched_ns)::BIGINT AS launch_delay_avg_ns, max(start_ns - launched_ns) AS launch_delay_max_ns
    FROM placed GROUP BY rank, capture, step
), annotations AS (
    SELECT s.rank, s.capture, s.step,
           sum(h.dur_ns) FILTER (WHERE h.category = 'dataloader') AS dataloader_ns,
           sum(h.dur_ns) FILTER (WHERE h.category = 'forward') AS forward_spans_ns,
           sum(h.dur_ns) FILTER (WHERE h.category = 'optimizer') AS optimizer_ns,
           min(h.start_ns) FILTER (WHERE h.category = 'backward') AS backward_start_ns
    FROM {{ ref('stg_host_op') }} h ASOF JOIN steps s ON s.rank = h.rank AND s.capture = h.capture AND h.start_ns >= s.start_ns
    WHERE h.start_ns < s.end_ns
    GROUP BY s.rank, s.capture, s.step
)
SELECT s.rank, s.capture, s.step, s.total_ns AS step_ns,
       coalesce(d.compute_ns, 0) AS compute_ns, coalesce(d.communication_ns, 0) AS communication_ns,
       coalesce(d.memcpy_ns, 0) AS memcpy_ns, coalesce(d.memset_ns, 0) AS memset_ns,
       coalesce(busy.busy_ns, 0) AS busy_ns, s.total_ns - coalesce(busy.busy_ns, 0) AS idle_ns,
       o.overlapped_communication_ns,
       coalesce(d.kernels, 0) AS kernels, d.launch_delay_avg_ns, d.launch_delay_max_ns,
       a.dataloader_ns, coalesce(a.forward_spans_ns, a.backward_start_ns - s.fp_ns) AS forward_ns,
       s.bp_ns - a.backward_start_ns AS backward_ns,
       a.optimizer_ns
FROM steps s
LEFT JOIN device d USING (rank, capture, step)
LEFT JOIN annotations a USING (rank, capture, step)
LEFT JOIN {{ ref('step_overlap') }} o USING (rank, capture, step)
LEFT JOIN (SELECT rank, capture, step, sum(dur_ns) AS busy_ns FROM {{ ref('overlap_segment') }}
           WHERE category IN ('computation', 'pure_communication') GROUP BY rank, capture, step) busy
     USING (rank, capture, step)
