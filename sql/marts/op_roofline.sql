-- The roofline of each op execution the model library can cost (macro op_roofline_cost: GEMMs, conv2d, attention,
-- norms, element-wise ops, from host_op's input dims and types), per rank, op name, input dims and type. An execution
-- counts when it launched device work, itself or through the ops nested in it (device_ns: host_op_stats'
-- device_total_ns rule), and it is nested in no costed op: the outermost costed op is the row, with all the device
-- time it launched (aten::linear, not the aten::addmm it runs; aten::conv2d with its bias add), so no kernel counts
-- twice. Peaks: macro gpu_datasheet for the rank's first GPU (run_info deviceProperties name),
-- the compute peak for the op's input type (half / bfloat16: dense tensor core; float: TF32 tensor core, else FP32;
-- double: FP64); NULL, and no bound, for a device or type the data sheets do not give.
WITH RECURSIVE own AS (
    SELECT rank, capture, op_index, parent_index FROM {{ ref('stg_host_op') }} WHERE op_index IS NOT NULL
), signature AS (  -- each distinct input signature costed once
    SELECT op_name, input_dims, input_types, concrete_inputs,
           op_roofline_cost(op_name, input_dims, input_types, concrete_inputs) AS cost
    FROM (SELECT DISTINCT op_name, input_dims, input_types, concrete_inputs
          FROM {{ ref('stg_host_op') }} WHERE input_dims IS NOT NULL)
), costed AS (
    SELECT h.rank, h.capture, h.op_index, h.parent_index, h.op_name, h.input_dims, s.cost
    FROM {{ ref('stg_host_op') }} h
    JOIN signature s ON s.op_name = h.op_name AND s.input_dims = h.input_dims
         AND s.input_types IS NOT DISTINCT FROM h.input_types AND s.concrete_inputs IS NOT DISTINCT FROM h.concrete_inputs
    WHERE s.cost.bytes IS NOT NULL AND h.op_index IS NOT NULL
), under_costed AS (  -- the costed ops and every op nested in them, at any depth
    SELECT rank, capture, op_index FROM costed
    UNION
    SELECT o.rank, o.capture, o.op_index
    FROM under_costed u JOIN own o ON o.rank = u.rank AND o.capture = u.capture AND o.parent_index = u.op_index
), measured AS (  -- the outermost costed executions
    SELECT c.rank, c.op_name, c.input_dims, c.cost.dtype AS dtype, c.cost.op_class AS op_class,
           c.cost.flop AS flop, c.cost.bytes AS bytes, t.device_total_ns AS device_ns
    FROM costed c
    JOIN {{ ref('int_host_op_device_total') }} t USING (rank, capture, op_index)
    ANTI JOIN under_costed u ON u.rank = c.rank AND u.capture = c.capture AND u.op_index = c.parent_index
    WHERE t.device_total_ns > 0
), per_shape AS (
    SELECT rank, op_name, input_dims, dtype, any_value(op_class) AS op_class, count(*) AS executions,
           sum(device_ns)::BIGINT AS device_ns,
           CASE WHEN count(flop) = count(*) THEN sum(flop)::BIGINT END AS flop, sum(bytes)::BIGINT AS bytes
    FROM measured
    GROUP BY rank, op_name, input_dims, dtype
), rank_device AS (
    SELECT rank, sum(dur_ns) AS device_ns FROM {{ ref('stg_device_exec') }} GROUP BY rank
), devices AS (
    SELECT rank, any_value(json_extract_string(metadata_json, '$.deviceProperties[0].name')) AS device_name
    FROM {{ ref('stg_run_info') }} GROUP BY rank
), peaks AS (
    SELECT p.*, d.device_name, gpu_datasheet(d.device_name) AS sheet,
           p.flop / nullif(p.bytes, 0) AS intensity_flop_per_byte,
           p.flop / (p.device_ns / 1e9) AS achieved_flop_per_second,
           p.bytes / (p.device_ns / 1e9) AS achieved_bytes_per_second
    FROM per_shape p LEFT JOIN devices d USING (rank)
), roofs AS (
    SELECT *, CASE dtype WHEN 'c10::Half' THEN sheet.fp16_flop_per_second
                         WHEN 'c10::BFloat16' THEN sheet.bf16_flop_per_second
                         WHEN 'float' THEN sheet.tf32_flop_per_second
                         WHEN 'double' THEN sheet.fp64_flop_per_second END AS peak_flop_per_second,
              sheet.memory_bytes_per_second AS peak_bytes_per_second
    FROM peaks
), ridge AS (
    SELECT *, peak_flop_per_second / peak_bytes_per_second AS ridge_flop_per_byte,
           least(peak_flop_per_second, intensity_flop_per_byte * peak_bytes_per_second) AS attainable_flop_per_second
    FROM roofs
)
SELECT r.rank, r.op_name, r.op_class, r.input_dims, r.dtype, r.executions, r.device_ns,
       r.device_ns / nullif(d.device_ns, 0) AS device_share,
       r.flop, r.bytes, r.intensity_flop_per_byte, r.achieved_flop_per_second, r.achieved_bytes_per_second,
       r.device_name, r.peak_flop_per_second, r.peak_bytes_per_second, r.ridge_flop_per_byte,
       CASE WHEN r.intensity_flop_per_byte IS NULL OR r.ridge_flop_per_byte IS NULL THEN NULL
            WHEN r.intensity_flop_per_byte >= r.ridge_flop_per_byte THEN 'compute' ELSE 'memory' END AS bound,
       r.attainable_flop_per_second,
       r.achieved_flop_per_second / nullif(r.attainable_flop_per_second, 0) AS roof_ratio,
       CASE WHEN r.peak_flop_per_second IS NOT NULL THEN r.sheet.source END AS peak_source
FROM ridge r LEFT JOIN rank_device d USING (rank)
