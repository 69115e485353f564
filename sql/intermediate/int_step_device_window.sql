-- Each step's window on the device, the window of the per-step device figures (overlap_segment, step_overlap,
-- step_gpu_idle): on a GPU rank the step's GPU window (int_step_gpu_window: where the GPU ran the work of a host
-- step - a PyTorch / Paddle / Nsight Systems step is a host span, the GPU may run it long after - and a device-side
-- step trace's own window); elsewhere (Ascend and MindSpore CPU step traces, already on the device's clock) the
-- step's own window. A host step that ran nothing on the GPU has no window (NULL bounds).
SELECT s.rank, s.capture, s.step, coalesce(w.source, 'step') AS source,
       CASE WHEN w.rank IS NULL THEN s.start_ns ELSE w.start_ns END AS start_ns,
       CASE WHEN w.rank IS NULL THEN s.end_ns ELSE w.end_ns END AS end_ns
FROM {{ ref('int_step') }} s LEFT JOIN {{ ref('int_step_gpu_window') }} w USING (rank, capture, step)
WHERE s.start_ns IS NOT NULL AND s.end_ns IS NOT NULL
