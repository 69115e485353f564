-- GPU streams whose kernels are mostly shorter than the runtime calls that launch them (HTA's short-kernel
-- outliers in kernel_launch_stats) while the launch queue is almost always empty (time-weighted mean length
-- below 1, gpu_queue_length): the GPU runs each kernel as soon as the CPU manages to launch it.
SELECT rank, capture, NULL::BIGINT AS step, short_kernels / launches AS value, stream_id, launches, short_kernels,
       mean_queue_length, max_queue_length, avg_call_ns, avg_gpu_ns
FROM {{ ref('kernel_launch_stats') }}
WHERE launches > 0 AND short_kernels / launches > {{ threshold }} AND mean_queue_length < 1
