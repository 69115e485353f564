-- Ops (op_roofline: rank, op name, input dims and type) that take a notable part of the rank's device time (at least
-- 5 %) and reach under the threshold's share of their roof (achieved FLOP/s over the roof at their arithmetic
-- intensity); the worst, for each rank, is the lowest share. Only where the GPU's data-sheet peaks are known.
SELECT rank, NULL::INTEGER AS capture, NULL::BIGINT AS step, roof_ratio AS value, op_name, input_dims, dtype, bound,
       device_share, intensity_flop_per_byte, achieved_flop_per_second, attainable_flop_per_second, device_name
FROM {{ ref('op_roofline') }}
WHERE roof_ratio IS NOT NULL AND device_share >= 0.05 AND roof_ratio < {{ threshold }}
