-- Each step's window on the GPU: where the device ran that step's work, which on an asynchronous GPU lies long after
-- the host's step. Steps that are host spans (PyTorch / Paddle Kineto traces, Nsight Systems: run_info.layout kineto
-- or nsys, ProfilerStep#N or an NVTX range): the span of the step's copies on the device (Kineto's
-- gpu_user_annotation ProfilerStep#N: the first start to the last end over the streams) where the trace has them,
-- else the first start to the last end of the kernels, memcpys and memsets the step's host span launched
-- (int_step_launch); such a window ends at the latest where the next step's window starts, so that no instant of the
-- GPU belongs to two steps. Steps of a device-side step trace (MindSpore GPU step_trace: already on the device's
-- clock) keep their own window. GPU ranks (run_info.device_type gpu), and ranks of other devices whose host steps
-- carry their device window as device_step_start / device_step_end points (torch_npu on Ascend: the first start and
-- last end of the op tasks and HCCL ops that start in the ProfilerStep#N span, msprof-analyze's step window); a
-- host step that ran nothing on the device has no window (NULL bounds).
WITH annotated AS (
    SELECT rank, capture, step, min(ts_ns) FILTER (WHERE kind = 'device_step_start') AS start_ns,
           max(ts_ns) FILTER (WHERE kind = 'device_step_end') AS end_ns
    FROM {{ ref('stg_step_point') }} WHERE kind IN ('device_step_start', 'device_step_end')
    GROUP BY rank, capture, step
), gpu_ranks AS (
    SELECT rank, capture, bool_or(layout IN ('kineto', 'nsys')) AS host_steps
    FROM {{ ref('stg_run_info') }} WHERE device_type = 'gpu' GROUP BY rank, capture
), ranks AS (
    SELECT * FROM gpu_ranks
    UNION ALL
    SELECT DISTINCT rank, capture, true FROM annotated
    WHERE (rank, capture) NOT IN (SELECT (rank, capture) FROM gpu_ranks)
), steps AS (
    SELECT s.rank, s.capture, s.step, s.start_ns, s.end_ns, r.host_steps FROM {{ ref('int_step') }} s
    JOIN ranks r USING (rank, capture)
    WHERE s.start_ns IS NOT NULL AND s.end_ns IS NOT NULL
), launched AS (
    SELECT rank, capture, step, min(start_ns) AS start_ns, max(start_ns + dur_ns) AS end_ns
    FROM {{ ref('int_step_launch') }} GROUP BY rank, capture, step
), spans AS (
    SELECT s.rank, s.capture, s.step, s.start_ns AS host_start_ns, s.end_ns AS host_end_ns,
           coalesce(a.end_ns >= a.start_ns, false) AS has_copies,
           CASE WHEN has_copies THEN a.start_ns ELSE l.start_ns END AS start_ns,
           CASE WHEN has_copies THEN a.end_ns ELSE l.end_ns END AS end_ns
    FROM steps s LEFT JOIN annotated a USING (rank, capture, step) LEFT JOIN launched l USING (rank, capture, step)
    WHERE s.host_steps
)
SELECT rank, capture, step, host_start_ns, host_end_ns,
       CASE WHEN has_copies THEN 'device_annotation' WHEN start_ns IS NOT NULL THEN 'launched' END AS source,
       start_ns,
       least(end_ns, min(start_ns) OVER (PARTITION BY rank, capture ORDER BY start_ns NULLS LAST, step
                                         ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING)) AS end_ns
FROM spans
UNION ALL  -- a device-side step trace: the step is already where the device ran it
SELECT rank, capture, step, start_ns, end_ns, 'step', start_ns, end_ns FROM steps WHERE NOT host_steps
