-- Achieved FLOP/s of the ops PyTorch counts FLOPs for (host_op.flops: with_flops formulas from input shapes), per
-- rank and op name: their FLOPs over the device time of the kernels they launched, themselves and through the ops
-- nested in them (host_op_stats.device_total_ns), and that as a share of the device's peak: --peak-tflops (run
-- option peak_tflops) where given, else the peak of the trace's device (run_info deviceProperties, the rank's
-- first device) for the op's input type (macro gpu_peak_tflops). Each op's kernels count once, with all its FLOPs:
-- an op that launches several kernels is measured over all of them.
WITH counted AS (
    SELECT rank, op_name, count(*) AS calls, count(flops) AS counted_calls, sum(flops)::HUGEINT AS flops,
           mode(flops_dtype) AS dtype
    FROM {{ ref('stg_host_op') }}
    GROUP BY rank, op_name HAVING count(flops) > 0
), devices AS (
    SELECT rank, any_value(json_extract_string(metadata_json, '$.deviceProperties[0].name')) AS device_name
    FROM {{ ref('stg_run_info') }} GROUP BY rank
), given AS (
    SELECT try_cast(max(value) AS DOUBLE) AS peak_tflops FROM {{ ref('stg_run_option') }} WHERE name = 'peak_tflops'
)
SELECT c.rank, c.op_name, c.calls, c.counted_calls, c.flops::BIGINT AS flops, c.dtype, s.device_total_ns::BIGINT AS device_ns,
       c.flops / nullif(s.device_total_ns, 0) * 1e9 AS achieved_flops_per_second,
       d.device_name,
       coalesce(g.peak_tflops, gpu_peak_tflops(d.device_name, c.dtype)) * 1e12 AS peak_flops_per_second,
       CASE WHEN g.peak_tflops IS NOT NULL THEN 'option' WHEN gpu_peak_tflops(d.device_name, c.dtype) IS NOT NULL
            THEN 'device' END AS peak_source,
       c.flops / nullif(s.device_total_ns, 0) * 1e9
           / (coalesce(g.peak_tflops, gpu_peak_tflops(d.device_name, c.dtype)) * 1e12) AS peak_share
FROM counted c
LEFT JOIN {{ ref('host_op_stats') }} s USING (rank, op_name)
LEFT JOIN devices d USING (rank)
CROSS JOIN given g
