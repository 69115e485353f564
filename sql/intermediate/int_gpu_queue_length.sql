-- The launch queue of each GPU stream over time, as HTA counts it: +1 when a launch call starts (kernel launches
-- of the runtime and driver, including Triton's cuLaunchKernel, and async memcpy and memset calls) whose activity
-- is in the trace, -1 when that activity starts on the GPU (not when it ends). One row per change point. The mart
-- gpu_queue_length publishes it; the critical path's launch edges read it.
WITH launch AS (
    SELECT rank, capture, stream_id, call_start_ns, start_ns FROM {{ ref('int_launched_activity') }}
    WHERE kind IN ('kernel', 'memcpy', 'memset') AND call_start_ns IS NOT NULL
      AND regexp_matches(api_name, '^(cudaLaunchKernel|cudaLaunchKernelExC|cuLaunchKernel|cuLaunchKernelEx|cudaMemcpyAsync|cudaMemsetAsync|hipLaunchKernel|hipExtLaunchKernel|hipMemcpyAsync|hipMemsetAsync)$')
), changes AS (
    SELECT rank, capture, stream_id, call_start_ns AS ts_ns, 1 AS delta FROM launch
    UNION ALL
    SELECT rank, capture, stream_id, start_ns, -1 FROM launch
), points AS (
    SELECT rank, capture, stream_id, ts_ns, sum(delta)::BIGINT AS delta FROM changes GROUP BY ALL
)
SELECT rank, capture, stream_id, ts_ns,
       (sum(delta) OVER (PARTITION BY rank, capture, stream_id ORDER BY ts_ns ROWS UNBOUNDED PRECEDING))::BIGINT AS queue_length,
       lead(ts_ns) OVER (PARTITION BY rank, capture, stream_id ORDER BY ts_ns) - ts_ns AS held_ns
FROM points
