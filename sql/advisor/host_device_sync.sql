-- Steps in which the host blocks on the device: the time the host spent inside the step in CUDA runtime and driver
-- calls that wait for the GPU (step_gpu_time.host_sync_ns: device, stream and event synchronisation, the synchronous
-- cudaMemcpy family, whose device-to-host copies are what tensor.item() and .cpu() issue; each call cut to the step
-- it overlaps, overlaps merged) as a share of that step. A wait outside every step (a cudaDeviceSynchronize after
-- the last step) is in no step and fires nothing.
SELECT rank, capture, step, host_sync_ns / step_ns AS value, host_sync_apis AS apis, host_sync_ns AS sync_ns,
       host_sync_calls AS sync_calls, step_ns
FROM {{ ref('step_gpu_time') }}
WHERE step_ns > 0 AND host_sync_ns / step_ns > {{ threshold }}
