-- Two definitions side by side (column definition):
-- * hta: HolisticTraceAnalysis' get_temporal_breakdown. Window: the first start to the last end of the GPU
--   activities HTA keeps (int_hta_gpu_event: its µs rounding and step cut-off; syncs included); compute: the union
--   of the activities of HTA's type computation (macro hta_kernel_type); idle: the window less the union of all.
-- * profpipe: the GPU's own span of the rank's steps (int_step_gpu_window: from the first step's GPU window start
--   to the last one's end, where the device ran the steps' work, which on an asynchronous GPU lies long after the
--   host's steps; the span of its device work without steps), every kernel, memcpy and memset cut to it, at ns
--   precision; compute: kernels that are not communication (NCCL, HCCL); memory copies and sets are their own
--   kind, not compute.
-- * hta differs from HTA in one rule: an activity its µs rounding made -1 µs long (start rounded up past its end
--   rounded down) lasts 0 here. HTA's merge counts such an activity that no earlier one covers as a run of its own,
--   -1 µs long, so a memcpy rounded to -1 µs at the start of a compute kernel lowers HTA's busy time but not its
--   compute time, and its non_compute time can come out negative (HTA 0.5 then stops on
--   `assert non_compute_time >= 0`); with lengths of 0 the merge is the union, compute <= busy, and HTA's numbers
--   are kept wherever no activity is -1 µs long alone.
-- Both: non_compute = busy time when no compute runs (communication, memory or other work alone); compute +
-- non_compute + idle = the window. Unions merge what overlaps, across streams. non_compute splits into exposed
-- communication, memory and other (what runs with no compute beside it: communication first, then memory); the
-- *_busy columns are each kind's own union, overlapping compute and each other.
WITH steps AS (
    SELECT w.rank, w.capture, min(w.start_ns) AS start_ns, max(w.end_ns) AS end_ns
    FROM {{ ref('int_step_gpu_window') }} w JOIN {{ ref('step_phases') }} p USING (rank, capture, step)
    GROUP BY w.rank, w.capture
), ours AS (
    SELECT rank, capture, start_ns, start_ns + dur_ns AS end_ns,
           CASE WHEN kind IN ('memcpy', 'memset') THEN 'memory'
                WHEN regexp_matches(name, '(?i)nccl|hccl') THEN 'communication' ELSE 'compute' END AS category
    FROM {{ ref('stg_device_exec') }} WHERE kind IN ('kernel', 'memcpy', 'memset')
), hta AS (  -- HTA's activities, a -1 µs one 0 µs long
    SELECT rank, capture, hta_type, start_ns, greatest(end_ns, start_ns) AS end_ns FROM {{ ref('int_hta_gpu_event') }}
), windows AS (
    SELECT 'profpipe' AS definition, o.rank, o.capture,
           coalesce(any_value(s.start_ns), min(o.start_ns)) AS start_ns, coalesce(any_value(s.end_ns), max(o.end_ns)) AS end_ns
    FROM ours o LEFT JOIN steps s USING (rank, capture) GROUP BY o.rank, o.capture
    UNION ALL
    SELECT 'hta', rank, capture, min(start_ns), max(end_ns) FROM hta GROUP BY rank, capture
), intervals AS (
    SELECT {'rank': o.rank, 'capture': o.capture, 'definition': 'profpipe'} AS grp, o.category,
           greatest(o.start_ns, w.start_ns) AS start_ns, least(o.end_ns, w.end_ns) AS end_ns
    FROM ours o JOIN windows w ON w.definition = 'profpipe' AND w.rank = o.rank AND w.capture = o.capture
    UNION ALL
    SELECT {'rank': rank, 'capture': capture, 'definition': 'hta'},
           CASE hta_type WHEN 'computation' THEN 'compute' ELSE hta_type END, start_ns, end_ns
    FROM hta
), totals AS (
    SELECT grp.rank AS rank, grp.capture AS capture, grp.definition AS definition,
           sum(end_ns - start_ns) FILTER (WHERE len(categories) > 0) AS busy_ns,
           sum(end_ns - start_ns) FILTER (WHERE list_contains(categories, 'compute')) AS compute_ns,
           sum(end_ns - start_ns) FILTER (WHERE list_contains(categories, 'communication')) AS communication_busy_ns,
           sum(end_ns - start_ns) FILTER (WHERE list_contains(categories, 'memory')) AS memory_busy_ns,
           sum(end_ns - start_ns) FILTER (WHERE list_contains(categories, 'other')) AS other_busy_ns,
           sum(end_ns - start_ns) FILTER (WHERE exposed = 'communication') AS exposed_communication_ns,
           sum(end_ns - start_ns) FILTER (WHERE exposed = 'memory') AS exposed_memory_ns,
           sum(end_ns - start_ns) FILTER (WHERE exposed = 'other') AS exposed_other_ns
    FROM (SELECT *, CASE WHEN list_contains(categories, 'compute') THEN NULL  -- what runs with no compute beside it,
                         WHEN list_contains(categories, 'communication') THEN 'communication'  -- by this precedence
                         WHEN list_contains(categories, 'memory') THEN 'memory'
                         WHEN len(categories) > 0 THEN 'other' END AS exposed
          FROM interval_sweep(intervals))
    GROUP BY ALL
)
SELECT w.rank, w.capture, w.definition,
       w.start_ns AS window_start_ns, w.end_ns AS window_end_ns, w.end_ns - w.start_ns AS window_ns,
       coalesce(t.busy_ns, 0)::BIGINT AS busy_ns,
       (w.end_ns - w.start_ns - coalesce(t.busy_ns, 0))::BIGINT AS idle_ns,
       coalesce(t.compute_ns, 0)::BIGINT AS compute_ns,
       (coalesce(t.busy_ns, 0) - coalesce(t.compute_ns, 0))::BIGINT AS non_compute_ns,
       coalesce(t.exposed_communication_ns, 0)::BIGINT AS exposed_communication_ns,
       coalesce(t.exposed_memory_ns, 0)::BIGINT AS exposed_memory_ns,
       coalesce(t.exposed_other_ns, 0)::BIGINT AS exposed_other_ns,
       coalesce(t.communication_busy_ns, 0)::BIGINT AS communication_busy_ns,
       coalesce(t.memory_busy_ns, 0)::BIGINT AS memory_busy_ns,
       coalesce(t.other_busy_ns, 0)::BIGINT AS other_busy_ns,
       (w.end_ns - w.start_ns - coalesce(t.busy_ns, 0)) / nullif(w.end_ns - w.start_ns, 0) AS idle_share,
       coalesce(t.compute_ns, 0) / nullif(w.end_ns - w.start_ns, 0) AS compute_share,
       (coalesce(t.busy_ns, 0) - coalesce(t.compute_ns, 0)) / nullif(w.end_ns - w.start_ns, 0) AS non_compute_share
FROM windows w LEFT JOIN totals t USING (rank, capture, definition)
