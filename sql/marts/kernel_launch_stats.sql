-- Per rank and GPU stream: launches, the host's time in the calls, the two launch delays (kernel_launch) and how
-- many launches each outlier rule flags, and the launch queue (gpu_queue_length): its longest and its mean over
-- time (time-weighted between the stream's first and last change; HTA summarises the change points unweighted).
WITH launches AS (
    SELECT rank, capture, stream_id, count(*) AS launches,
           avg(call_dur_ns) AS avg_call_ns, avg(dur_ns) AS avg_gpu_ns,
           avg(delay_from_call_start_ns) AS avg_delay_from_call_start_ns,
           median(delay_from_call_start_ns)::DOUBLE AS median_delay_from_call_start_ns,
           avg(delay_from_call_end_ns) AS avg_delay_from_call_end_ns,
           median(delay_from_call_end_ns)::DOUBLE AS median_delay_from_call_end_ns,
           quantile_cont(delay_from_call_end_ns, 0.95) AS p95_delay_from_call_end_ns,
           max(delay_from_call_end_ns) AS max_delay_from_call_end_ns,
           count(*) FILTER (WHERE runtime_outlier) AS runtime_outliers,
           count(*) FILTER (WHERE launch_delay_outlier) AS launch_delay_outliers,
           count(*) FILTER (WHERE short_kernel) AS short_kernels
    FROM {{ ref('kernel_launch') }} GROUP BY ALL
), queues AS (
    SELECT rank, capture, stream_id, max(queue_length) AS max_queue_length,
           sum(queue_length * held_ns) / nullif(sum(held_ns), 0) AS mean_queue_length
    FROM {{ ref('gpu_queue_length') }} GROUP BY ALL
)
SELECT l.*, q.max_queue_length, q.mean_queue_length
FROM launches l LEFT JOIN queues q ON q.rank = l.rank AND q.capture = l.capture
                                   AND q.stream_id IS NOT DISTINCT FROM l.stream_id
