-- Each device activity with the runtime or driver call that launched it (same correlation id, the last call
-- before it): how long the host spent in the call and how long the GPU took to start the work. Two delays, both
-- named: from the call's start (HTA's runtime_delay) and from its end (HTA's launch_delay before its clip at 0;
-- nsys's queue time Q when not negative). Outliers by HTA's default rules: a runtime outlier is a call longer than
-- 50 µs; a launch-delay outlier starts more than 100 µs after its call ended; a short kernel is one whose call
-- took at most 50 µs and longer than the kernel itself.
SELECT rank, capture, correlation, api_name, tid, stream_id, kind, name, call_start_ns, call_dur_ns, start_ns, dur_ns,
       start_ns - call_start_ns AS delay_from_call_start_ns,
       start_ns - (call_start_ns + call_dur_ns) AS delay_from_call_end_ns,
       api_name IN ('cudaLaunchKernel', 'cudaLaunchKernelExC', 'runFunction - job_prep_and_submit_for_execution',
                    'cudaMemcpyAsync', 'cudaMemsetAsync') AS in_hta_launch_stats,
       call_dur_ns > 50000 AS runtime_outlier,
       start_ns - (call_start_ns + call_dur_ns) > 100000 AS launch_delay_outlier,
       call_dur_ns <= 50000 AND dur_ns < call_dur_ns AS short_kernel
FROM {{ ref('int_launched_activity') }}
WHERE kind IN ('kernel', 'memcpy', 'memset') AND call_start_ns IS NOT NULL
