-- Achieved FLOP/s of the ops PyTorch counts FLOPs for (host_op.flops: with_flops formulas from input shapes), per
-- rank and op name: their FLOPs over the device time of the kernels they launched, themselves and through the ops
-- nested in them (host_op_stats.device_total_ns), and that as a share of the device's peak: --peak-tflops (run
-- option peak_tflops) where given, else the peak of the trace's device (run_info deviceProperties, the rank's
-- first device) for the math the op ran. Each op's kernels count once, with all its FLOPs: an op that launches
-- several kernels is measured over all of them.
-- The math: half and bfloat16 inputs run on the tensor cores (macro gpu_peak_tflops); float and double inputs have
-- two peaks where the GPU has tensor cores for them (gpu_datasheet: TF32 since Ampere, which cuBLAS and cuDNN use for
-- float when PyTorch allows it; FP64 tensor cores on A100 and H100), and the one the op ran on is read from the trace:
-- its kernels' names (a TF32 tensor-core kernel: tf32 or the s1688 MMA in the name, e.g. sm80_xmma_gemm_*tf32*,
-- ampere_tf32_s1688gemm_*, cutlass_80_tensorop_s1688gemm_*, sm80_xmma_fprop_implicit_gemm_tf32f32_*; the CUDA
-- cores: sgemm, scudnn, f32f32_f32f32, ffma, e.g. ampere_sgemm_*, implicit_convolve_sgemm, ampere_scudnn_*,
-- sm80_xmma_gemm_f32f32_f32f32_f32_*_ffma_*), else the
-- rate (above the CUDA cores' peak, so it ran on the tensor cores), else unknown (compared with the CUDA cores'
-- peak, the lower one). A rate above the peak chosen (a FLOP count or device time no peak explains) has no share.
WITH RECURSIVE counted_exec AS (  -- each execution PyTorch counts FLOPs for, and the ops nested in it at any depth
    SELECT rank, capture, op_index AS root_index, op_index
    FROM {{ ref('stg_host_op') }} WHERE flops IS NOT NULL AND op_index IS NOT NULL
    UNION ALL
    SELECT c.rank, c.capture, c.root_index, h.op_index
    FROM counted_exec c JOIN {{ ref('stg_host_op') }} h
         ON h.rank = c.rank AND h.capture = c.capture AND h.parent_index = c.op_index
), named AS (  -- per rank and op name: whether the kernels it launched say TF32 tensor cores, or the CUDA cores
    SELECT r.rank, r.op_name, bool_or(regexp_matches(d.name, '(?i)tf32|s1688')) AS tf32_kernel,
           bool_or(regexp_matches(d.name, '(?i)sgemm|scudnn|f32f32_f32f32|ffma')) AS cuda_core_kernel
    FROM counted_exec c
    JOIN {{ ref('stg_host_op') }} r ON r.rank = c.rank AND r.capture = c.capture AND r.op_index = c.root_index
    JOIN {{ ref('stg_device_exec') }} d ON d.rank = c.rank AND d.capture = c.capture AND d.op_index = c.op_index
    GROUP BY r.rank, r.op_name
), counted AS (
    SELECT rank, op_name, count(*) AS calls, count(flops) AS counted_calls, sum(flops)::HUGEINT AS flops,
           mode(flops_dtype) AS dtype
    FROM {{ ref('stg_host_op') }}
    GROUP BY rank, op_name HAVING count(flops) > 0
), devices AS (
    SELECT rank, any_value(json_extract_string(metadata_json, '$.deviceProperties[0].name')) AS device_name
    FROM {{ ref('stg_run_info') }} GROUP BY rank
), given AS (
    SELECT try_cast(max(value) AS DOUBLE) AS peak_tflops FROM {{ ref('stg_run_option') }} WHERE name = 'peak_tflops'
), rates AS (
    SELECT c.*, s.device_total_ns, d.device_name, g.peak_tflops * 1e12 AS given_peak,
           c.flops / nullif(s.device_total_ns, 0) * 1e9 AS achieved,
           gpu_peak_tflops(d.device_name, c.dtype) * 1e12 AS core_peak,  -- CUDA cores for float / double
           CASE c.dtype WHEN 'float' THEN gpu_datasheet(d.device_name).tf32_flop_per_second
                        WHEN 'double' THEN gpu_datasheet(d.device_name).fp64_flop_per_second END AS tensor_peak,
           coalesce(n.tf32_kernel AND c.dtype = 'float', false) AS tf32_kernel,
           coalesce(n.cuda_core_kernel, false) AS cuda_core_kernel
    FROM counted c
    LEFT JOIN {{ ref('host_op_stats') }} s USING (rank, op_name)
    LEFT JOIN devices d USING (rank)
    LEFT JOIN named n USING (rank, op_name)
    CROSS JOIN given g
), chosen AS (
    SELECT *, CASE WHEN given_peak IS NOT NULL THEN 'option'
                   WHEN core_peak IS NULL THEN NULL
                   WHEN coalesce(tensor_peak <= core_peak, true) THEN 'dtype'  -- one peak for the type on this GPU
                   WHEN tf32_kernel THEN 'kernel_name'
                   WHEN achieved > core_peak THEN 'rate'
                   WHEN cuda_core_kernel THEN 'kernel_name'
                   ELSE 'unknown' END AS math_source,
              coalesce(tensor_peak > core_peak AND (tf32_kernel OR achieved > core_peak), false) AS on_tensor_cores
    FROM rates
), peaked AS (
    SELECT *, CASE WHEN given_peak IS NOT NULL THEN given_peak WHEN on_tensor_cores THEN tensor_peak
                   ELSE core_peak END AS peak,
              CASE WHEN given_peak IS NOT NULL OR core_peak IS NULL THEN NULL
                   WHEN on_tensor_cores THEN CASE dtype WHEN 'float' THEN 'tf32' ELSE 'fp64_tensor' END
                   ELSE CASE dtype WHEN 'float' THEN 'fp32' WHEN 'double' THEN 'fp64' WHEN 'c10::Half' THEN 'fp16'
                                   WHEN 'c10::BFloat16' THEN 'bf16' END END AS math_mode
    FROM chosen
)
SELECT rank, op_name, calls, counted_calls, flops::BIGINT AS flops, dtype, device_total_ns::BIGINT AS device_ns,
       achieved AS achieved_flops_per_second, device_name, peak AS peak_flops_per_second,
       CASE WHEN given_peak IS NOT NULL THEN 'option' WHEN peak IS NOT NULL THEN 'device' END AS peak_source,
       math_mode, CASE WHEN achieved > peak THEN 'above_peak' ELSE math_source END AS math_mode_source,
       CASE WHEN achieved <= peak THEN achieved / peak END AS peak_share
FROM peaked
