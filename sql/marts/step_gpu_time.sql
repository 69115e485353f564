-- Per step of a GPU trace: where the device's time went in the step's GPU window (int_step_gpu_window: where the
-- device ran the step's work, which on an asynchronous GPU lies long after the host's step). Every kernel, memcpy
-- and memset is cut to the window and each kind's union taken (overlaps across streams merged), so every part lies
-- within busy_ns and busy_ns + idle_ns = gpu_window_ns. kernels and the launch delays are of the work the host step
-- launched (int_step_launch); the DataLoader / forward / backward / optimizer split and the synchronising calls are
-- of the host's step.
WITH steps AS (
    SELECT p.rank, p.capture, p.step, p.start_ns, p.end_ns, p.total_ns, p.fp_ns, p.bp_ns,
           w.start_ns AS gpu_start_ns, w.end_ns AS gpu_end_ns
    FROM {{ ref('step_phases') }} p JOIN {{ ref('int_step_gpu_window') }} w USING (rank, capture, step)
), intervals AS (
    SELECT {'rank': s.rank, 'capture': s.capture, 'step': s.step} AS grp,
           CASE WHEN d.kind <> 'kernel' THEN d.kind
                WHEN regexp_matches(d.name, '(?i)nccl') THEN 'communication' ELSE 'compute' END AS category,
           greatest(d.start_ns, s.gpu_start_ns) AS start_ns, least(d.start_ns + d.dur_ns, s.gpu_end_ns) AS end_ns
    FROM steps s JOIN {{ ref('stg_device_exec') }} d
      ON d.rank = s.rank AND d.capture = s.capture AND d.start_ns < s.gpu_end_ns
     AND d.start_ns + d.dur_ns > s.gpu_start_ns
    WHERE d.kind IN ('kernel', 'memcpy', 'memset')
), device AS (
    SELECT grp.rank AS rank, grp.capture AS capture, grp.step AS step,
           sum(end_ns - start_ns) FILTER (WHERE len(categories) > 0) AS busy_ns,
           sum(end_ns - start_ns) FILTER (WHERE list_contains(categories, 'compute')) AS compute_ns,
           sum(end_ns - start_ns) FILTER (WHERE list_contains(categories, 'communication')) AS communication_ns,
           sum(end_ns - start_ns) FILTER (WHERE list_contains(categories, 'communication')
                                            AND list_contains(categories, 'compute')) AS overlapped_communication_ns,
           sum(end_ns - start_ns) FILTER (WHERE list_contains(categories, 'memcpy')) AS memcpy_ns,
           sum(end_ns - start_ns) FILTER (WHERE list_contains(categories, 'memset')) AS memset_ns
    FROM interval_sweep(intervals) GROUP BY ALL
), launched AS (
    SELECT rank, capture, step, count(*) AS kernels,
           avg(start_ns - call_start_ns)::BIGINT AS launch_delay_avg_ns, max(start_ns - call_start_ns) AS launch_delay_max_ns
    FROM {{ ref('int_step_launch') }} GROUP BY rank, capture, step
), syncs AS (  -- the CUDA calls in which the host waits for the device (device, stream and event synchronisation, the
               -- synchronous cudaMemcpy family that tensor.item() and .cpu() issue; cuda_api_stats' names, with or
               -- without a _vNNNN suffix), each cut to the host step it overlaps: a wait outside every step is in none
    SELECT {'rank': s.rank, 'capture': s.capture, 'step': s.step} AS grp, 'sync' AS category, c.name,
           greatest(c.start_ns, s.start_ns) AS start_ns, least(c.start_ns + c.dur_ns, s.end_ns) AS end_ns
    FROM steps s JOIN {{ ref('stg_host_api') }} c
      ON c.rank = s.rank AND c.capture = s.capture AND c.start_ns < s.end_ns AND c.start_ns + c.dur_ns > s.start_ns
    WHERE c.category IN ('cuda_runtime', 'cuda_driver')
      AND regexp_matches(c.name, '^(cudaDeviceSynchronize|cudaStreamSynchronize|cudaEventSynchronize|cudaMemcpy|'
                                 'cudaMemcpy2D|cudaMemcpyFromSymbol|cuCtxSynchronize|cuStreamSynchronize|'
                                 'cuEventSynchronize|cuMemcpyDtoH|cuMemcpy)(_v[0-9]{4})?$')
), sync_time AS (  -- overlaps merged (threads waiting at once count once), so the wait fits in the step
    SELECT grp.rank AS rank, grp.capture AS capture, grp.step AS step,
           sum(end_ns - start_ns) FILTER (WHERE len(categories) > 0) AS host_sync_ns
    FROM interval_sweep(syncs) GROUP BY ALL
), sync_calls AS (
    SELECT grp.rank AS rank, grp.capture AS capture, grp.step AS step, count(*) AS host_sync_calls,
           string_agg(DISTINCT name, ', ' ORDER BY name) AS host_sync_apis
    FROM syncs GROUP BY ALL
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
       s.gpu_start_ns AS gpu_window_start_ns, s.gpu_end_ns AS gpu_window_end_ns,
       coalesce(s.gpu_end_ns - s.gpu_start_ns, 0) AS gpu_window_ns,
       coalesce(d.compute_ns, 0)::BIGINT AS compute_ns, coalesce(d.communication_ns, 0)::BIGINT AS communication_ns,
       coalesce(d.memcpy_ns, 0)::BIGINT AS memcpy_ns, coalesce(d.memset_ns, 0)::BIGINT AS memset_ns,
       coalesce(d.busy_ns, 0)::BIGINT AS busy_ns,
       (coalesce(s.gpu_end_ns - s.gpu_start_ns, 0) - coalesce(d.busy_ns, 0))::BIGINT AS idle_ns,
       coalesce(d.overlapped_communication_ns, 0)::BIGINT AS overlapped_communication_ns,
       coalesce(l.kernels, 0) AS kernels, l.launch_delay_avg_ns, l.launch_delay_max_ns,
       a.dataloader_ns, coalesce(a.forward_spans_ns, a.backward_start_ns - s.fp_ns) AS forward_ns,
       s.bp_ns - a.backward_start_ns AS backward_ns,
       a.optimizer_ns,
       coalesce(st.host_sync_ns, 0)::BIGINT AS host_sync_ns, coalesce(sc.host_sync_calls, 0) AS host_sync_calls,
       sc.host_sync_apis
FROM steps s
LEFT JOIN device d USING (rank, capture, step)
LEFT JOIN launched l USING (rank, capture, step)
LEFT JOIN annotations a USING (rank, capture, step)
LEFT JOIN sync_time st USING (rank, capture, step)
LEFT JOIN sync_calls sc USING (rank, capture, step)
