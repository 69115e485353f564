-- Each device activity with the runtime or driver call that launched it (same correlation id, the last call
-- before it): how long the host spent in the call and how long the GPU took to start the work. Two delays, both
-- named: from the call's start (HTA's runtime_delay) and from its end (HTA's launch_delay before its clip at 0;
-- nsys's queue time Q when not negative). Outliers by HTA's default rules: a runtime outlier is a call longer than
-- 50 µs; a launch-delay outlier starts more than 100 µs after its call ended; a short kernel is one whose call
-- took at most 50 µs and longer than the kernel itself.
SELECT d.rank, d.capture, d.correlation, a.name AS api_name, a.tid, d.stream_id, d.kind, d.name,
       a.start_ns AS call_start_ns, a.dur_ns AS call_dur_ns, d.start_ns, d.dur_ns,
       d.start_ns - a.start_ns AS delay_from_call_start_ns,
       d.start_ns - (a.start_ns + a.dur_ns) AS delay_from_call_end_ns,
       a.name IN ('cudaLaunchKernel', 'cudaLaunchKernelExC', 'runFunction - job_prep_and_submit_for_execution',
                  'cudaMemcpyAsync', 'cudaMemsetAsync') AS in_hta_launch_stats,
       a.dur_ns > 50000 AS runtime_outlier,
       d.start_ns - (a.start_ns + a.dur_ns) > 100000 AS launch_delay_outlier,
       a.dur_ns <= 50000 AND d.dur_ns < a.dur_ns AS short_kernel
FROM {{ ref('stg_device_exec') }} d
ASOF JOIN {{ ref('stg_host_api') }} a
    ON a.rank = d.rank AND a.capture = d.capture AND a.correlation = d.correlation AND d.start_ns >= a.start_ns
WHERE d.kind IN ('kernel', 'memcpy', 'memset')
