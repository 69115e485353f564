-- Achieved FLOP/s of the ops PyTorch counts FLOPs for (host_op.flops: with_flops formulas from input shapes), per
-- rank and op name: their FLOPs over the device time of the kernels they launched, themselves and through the ops
-- nested in them (host_op_stats.device_total_ns), and that as a share of the device's peak: --peak-tflops (run
-- option peak_tflops) where given, else the peak of the trace's device (run_info deviceProperties, the rank's
-- first device) for the math the op ran. Each op's kernels count once, with all its FLOPs: an op that launches
-- several kernels is measured over all of them.
-- The math: half and bfloat16 inputs run on the tensor cores (macro gpu_peak_tflops); float and double inputs have
-- two peaks where the GPU has tensor cores for them (gpu_datasheet: TF32 since Ampere, which cuBLAS and cuDNN use for
-- float when PyTorch allows it; FP64 tensor cores on A100 and H100), and the one each execution ran on is read from
-- the trace: its kernels' names (a TF32 tensor-core kernel: tf32 or the s1688 MMA in the name, e.g.
-- sm80_xmma_gemm_*tf32*, ampere_tf32_s1688gemm_*, cutlass_80_tensorop_s1688gemm_*,
-- sm80_xmma_fprop_implicit_gemm_tf32f32_*; the CUDA cores: sgemm, scudnn, f32f32_f32f32, ffma, e.g. ampere_sgemm_*,
-- implicit_convolve_sgemm, ampere_scudnn_*, sm80_xmma_gemm_f32f32_f32f32_f32_*_ffma_*), else its rate (above the
-- CUDA cores' peak: it ran on the tensor cores), else unknown (the CUDA cores' peak, the lower one). An op whose
-- executions ran on both (cuBLAS picks per shape) is compared with their peaks weighted by device time, the peak
-- its FLOPs would reach if each execution ran at its own. A rate above the peak chosen (a FLOP count or device
-- time that no peak explains) has no share.
WITH RECURSIVE counted AS (
    SELECT rank, op_name, count(*) AS calls, count(flops) AS counted_calls, sum(flops)::HUGEINT AS flops,
           mode(flops_dtype) AS dtype
    FROM {{ ref('stg_host_op') }}
    GROUP BY rank, op_name HAVING count(flops) > 0
), execution AS (  -- each execution of those ops that launched device work
    SELECT h.rank, h.capture, h.op_index, h.op_name, h.flops, t.device_total_ns
    FROM {{ ref('stg_host_op') }} h
    JOIN counted c USING (rank, op_name)
    JOIN {{ ref('int_host_op_device_total') }} t USING (rank, capture, op_index)
    WHERE t.device_total_ns > 0
), nested AS (  -- an execution and the ops nested in it at any depth
    SELECT rank, capture, op_index AS root_index, op_index FROM execution
    UNION ALL
    SELECT n.rank, n.capture, n.root_index, h.op_index
    FROM nested n JOIN {{ ref('stg_host_op') }} h
         ON h.rank = n.rank AND h.capture = n.capture AND h.parent_index = n.op_index
), named AS (  -- per execution: whether the names of the kernels it launched say TF32 tensor cores, or CUDA cores
    SELECT n.rank, n.capture, n.root_index AS op_index, bool_or(regexp_matches(d.name, '(?i)tf32|s1688')) AS tf32_kernel,
           bool_or(regexp_matches(d.name, '(?i)sgemm|scudnn|f32f32_f32f32|ffma')) AS cuda_core_kernel
    FROM nested n
    JOIN {{ ref('stg_device_exec') }} d ON d.rank = n.rank AND d.capture = n.capture AND d.op_index = n.op_index
    GROUP BY ALL
), devices AS (
    SELECT rank, any_value(json_extract_string(metadata_json, '$.deviceProperties[0].name')) AS device_name
    FROM {{ ref('stg_run_info') }} GROUP BY rank
), peaks AS (  -- per op: the CUDA cores' peak for its type, and the tensor cores' where they are faster
    SELECT c.rank, c.op_name, d.device_name, gpu_peak_tflops(d.device_name, c.dtype) * 1e12 AS core_peak,
           CASE WHEN c.dtype = 'float' THEN gpu_datasheet(d.device_name).tf32_flop_per_second
                WHEN c.dtype = 'double' THEN gpu_datasheet(d.device_name).fp64_flop_per_second END AS tensor_peak
    FROM counted c LEFT JOIN devices d USING (rank)
), judged AS (  -- per execution on a GPU with two peaks for its type: which it ran on, and what says so
    SELECT e.rank, e.op_name, e.device_total_ns,
           coalesce(n.tf32_kernel AND c.dtype = 'float', false)
               OR coalesce(e.flops / e.device_total_ns * 1e9 > p.core_peak, false) AS on_tensor_cores,
           CASE WHEN coalesce(n.tf32_kernel AND c.dtype = 'float', false) OR coalesce(n.cuda_core_kernel, false)
                THEN 2 WHEN e.flops / e.device_total_ns * 1e9 > p.core_peak THEN 1 ELSE 0 END AS evidence
    FROM execution e JOIN counted c USING (rank, op_name) JOIN peaks p USING (rank, op_name)
    LEFT JOIN named n USING (rank, capture, op_index)
    WHERE p.tensor_peak > p.core_peak
), per_op AS (
    SELECT rank, op_name, coalesce(sum(device_total_ns) FILTER (WHERE on_tensor_cores), 0) / sum(device_total_ns)
               AS tensor_time_share,
           bool_and(on_tensor_cores) AS all_tensor, bool_or(on_tensor_cores) AS any_tensor, min(evidence) AS evidence
    FROM judged GROUP BY rank, op_name
), rated AS (
    SELECT c.*, s.device_total_ns, p.device_name, p.core_peak, p.tensor_peak, j.tensor_time_share, j.all_tensor,
           j.any_tensor, j.evidence, g.peak_tflops * 1e12 AS given_peak,
           c.flops / nullif(s.device_total_ns, 0) * 1e9 AS achieved
    FROM counted c
    LEFT JOIN {{ ref('host_op_stats') }} s USING (rank, op_name)
    LEFT JOIN peaks p USING (rank, op_name)
    LEFT JOIN per_op j USING (rank, op_name)
    CROSS JOIN (SELECT try_cast(max(value) AS DOUBLE) AS peak_tflops FROM {{ ref('stg_run_option') }}
                WHERE name = 'peak_tflops') g
), peaked AS (
    SELECT *,
           CASE WHEN given_peak IS NOT NULL THEN given_peak
                WHEN tensor_time_share IS NULL THEN core_peak
                ELSE tensor_time_share * tensor_peak + (1 - tensor_time_share) * core_peak END AS peak,
           CASE WHEN given_peak IS NOT NULL OR core_peak IS NULL THEN NULL
                WHEN any_tensor AND NOT all_tensor THEN 'mixed'
                WHEN all_tensor THEN CASE dtype WHEN 'float' THEN 'tf32' ELSE 'fp64_tensor' END
                ELSE CASE dtype WHEN 'float' THEN 'fp32' WHEN 'double' THEN 'fp64' WHEN 'c10::Half' THEN 'fp16'
                                WHEN 'c10::BFloat16' THEN 'bf16' END END AS math_mode,
           CASE WHEN given_peak IS NOT NULL THEN 'option' WHEN core_peak IS NULL THEN NULL
                WHEN coalesce(tensor_peak <= core_peak, true) THEN 'dtype'  -- one peak for the type on this GPU
                WHEN evidence IS NULL THEN 'unknown'  -- no device time: nothing to judge by
                ELSE ['unknown', 'rate', 'kernel_name'][evidence + 1] END AS math_source  -- the weakest of its executions
    FROM rated
)
SELECT rank, op_name, calls, counted_calls, flops::BIGINT AS flops, dtype, device_total_ns::BIGINT AS device_ns,
       achieved AS achieved_flops_per_second, device_name, peak AS peak_flops_per_second,
       CASE WHEN given_peak IS NOT NULL THEN 'option' WHEN peak IS NOT NULL THEN 'device' END AS peak_source,
       math_mode, tensor_time_share AS tensor_core_time_share,
       CASE WHEN achieved > peak THEN 'above_peak' ELSE math_source END AS math_mode_source,
       CASE WHEN achieved <= peak THEN achieved / peak END AS peak_share
FROM peaked
