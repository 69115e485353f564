-- Steps in which the device does nothing (neither computes nor communicates) for more than the threshold of the
-- step's window on the device (step_overlap.free_ns / total_ns: a host step's GPU window), with the main cause of
-- the GPU streams' idle gaps in the step where the trace links kernels to their launches (step_gpu_idle: host_wait,
-- kernel_wait or other, the cause with the most idle time).
WITH causes AS (
    SELECT rank, capture, step, category, sum(idle_ns) AS idle_ns
    FROM {{ ref('step_gpu_idle') }}
    GROUP BY rank, capture, step, category
), main_cause AS (
    SELECT rank, capture, step, arg_max(category, idle_ns) AS cause, max(idle_ns) AS cause_idle_ns,
           sum(idle_ns) AS stream_idle_ns
    FROM causes GROUP BY rank, capture, step
)
SELECT o.rank, o.capture, o.step, o.free_ns / o.total_ns AS value, c.cause, o.free_ns, o.total_ns,
       c.cause_idle_ns, c.stream_idle_ns
FROM {{ ref('step_overlap') }} o
LEFT JOIN main_cause c USING (rank, capture, step)
WHERE o.total_ns > 0 AND o.free_ns / o.total_ns > {{ threshold }}
