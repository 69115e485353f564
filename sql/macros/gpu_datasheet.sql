-- gpu_datasheet(device_name): a GPU's roofline peaks from NVIDIA's data sheets, by its deviceProperties name, as a
-- struct: device (the part matched), fp64_flop_per_second (FP64 tensor core where it has one), tf32_flop_per_second
-- (the most a float op can reach: TF32 tensor core where the GPU has one, else FP32), fp16_flop_per_second,
-- bf16_flop_per_second (dense tensor core: the data sheets' "with sparsity" figures halved), memory_bytes_per_second
-- (HBM / GDDR bandwidth, decimal TB/s and GB/s), source. NULL for a GPU not listed (never guessed). Dense TFLOPS and
-- bandwidth, each checked against the vendor's document named (2026-11; "*" figures of the data sheets are with
-- sparsity, halved here):
--   H100 SXM5 80GB ('H100 80GB HBM3', 'H100 SXM'): FP64 67, TF32 494.7, FP16/BF16 989.4, 3.35 TB/s. The data sheet
--     gives 67 / 989* / 1,979* / 3.35 TB/s; 494.7 and 989.4 are the unrounded dense figures of the NVIDIA H100 Tensor
--     Core GPU Architecture whitepaper, 0.02-0.04 % from the halved rounded ones. Source: NVIDIA H100 Tensor
--     Core GPU data sheet, https://resources.nvidia.com/en-us-gpu-resources/h100-datasheet-24306
--   H100 PCIe: 51, 378, 756.5, 2.0 TB/s (data sheet's PCIe column: FP64 Tensor Core 51, TF32 756*, FP16/BF16 1,513*;
--     NVIDIA H100 PCIe product brief PB-11133-001: "greater than 2,000 GB/s"). Was 756 before 2026-11: 1,513 / 2 is
--     756.5.
--   H100 NVL: 60, 417.5, 835.5, 3.9 TB/s (same H100 data sheet, NVL column: 60, 835*, 1,671*, 3.9 TB/s)
--   H200 (SXM): 67, 494.7, 989.4, 4.8 TB/s; H200 NVL: 60, 417.5, 835.5, 4.8 TB/s (NVIDIA H200 Tensor Core GPU data
--     sheet, https://nvdam.widen.net/s/nb5zzzsjdf/hpc-datasheet-sc23-h200-datasheet-3002446: SXM 67 / 989* / 1,979*,
--     NVL 60 / 835* / 1,671*, both 4.8 TB/s; the SXM's dense figures as for the H100 SXM, the same GH100 at the same
--     rates); a GH200 is not listed (its names start 'NVIDIA GH200', which the H200 patterns do not match)
--   A100 SXM4 80GB: FP64 19.5, TF32 156, FP16/BF16 312, 2,039 GB/s; A100 80GB PCIe: 1,935 GB/s; A100 40GB (SXM4 and
--     PCIe): 1,555 GB/s (NVIDIA A100 Tensor Core GPU data sheet,
--     https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf:
--     FP64 Tensor Core 19.5, TF32 156 / 312*, FP16/BF16 312 / 624*)
--   V100 SXM2: FP64 7.8, FP32 15.7, FP16 125, no BF16, 900 GB/s; V100 PCIe: 7, 14, 112, 900 GB/s; V100S PCIe: 8.2,
--     16.4, 130, 1,134 GB/s (NVIDIA V100 Tensor Core GPU data sheet,
--     https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf). The
--     V100S row is new in 2026-11: before it, a 'Tesla V100S-PCIE-32GB' matched the V100 PCIe row (900 GB/s).
--   L4: FP32 30.3, TF32 60, FP16/BF16 121, 300 GB/s, FP64 not given (NVIDIA L4 Tensor Core GPU data sheet,
--     https://resources.nvidia.com/en-us-data-center-overview-mc/en-us-data-center-overview/l4-gpu-datasheet: TF32
--     120*, FP16/BF16 242*)
--   L40S: FP32 91.6, TF32 183, FP16/BF16 362, 864 GB/s (NVIDIA L40S data sheet,
--     https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413: TF32 183 / 366*, FP16/BF16 362.05 / 733*)
--   A10: FP32 31.2, TF32 62.5, FP16/BF16 125, 600 GB/s (NVIDIA A10 Tensor Core GPU data sheet,
--     https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a10/pdf/a10-datasheet.pdf: TF32 62.5 / 125*,
--     FP16/BF16 125 / 250*)
--   T4: FP32 8.1, FP16 65 (mixed precision), no BF16, 320 GB/s (NVIDIA T4 Tensor Core GPU data sheet,
--     https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf)
-- Checked against transcriptions of these sheets in public code and pages (MosaicML Composer's GPU_AVAILABLE_FLOPS
-- for H100 SXM / PCIe, A100, A10, V100 SXM2 / PCIe / V100S, T4; copies of the V100 and A100 sheets' tables; L40S
-- 362 / 864 GB/s in other tools' tables; H100 SXM / PCIe and H200 tables of resellers), not the PDFs themselves;
-- the L4 row was found in no transcription here and stays as first written.
CREATE MACRO gpu_datasheet(device_name) AS (
    SELECT {'device': part, 'fp64_flop_per_second': fp64 * 1e12, 'tf32_flop_per_second': tf32 * 1e12,
            'fp16_flop_per_second': fp16 * 1e12, 'bf16_flop_per_second': bf16 * 1e12,
            'memory_bytes_per_second': gbps * 1e9, 'source': source}
    FROM (VALUES
        (1, '%H100%PCIe%', 'H100 PCIe', 51.0, 378.0, 756.5, 756.5, 2000, 'NVIDIA H100 Tensor Core GPU data sheet'),
        (2, '%H100%NVL%', 'H100 NVL', 60.0, 417.5, 835.5, 835.5, 3900, 'NVIDIA H100 Tensor Core GPU data sheet'),
        (3, '%H100%', 'H100 SXM5', 67.0, 494.7, 989.4, 989.4, 3350, 'NVIDIA H100 Tensor Core GPU data sheet'),
        (4, 'NVIDIA H200%NVL%', 'H200 NVL', 60.0, 417.5, 835.5, 835.5, 4800, 'NVIDIA H200 Tensor Core GPU data sheet'),
        (5, 'NVIDIA H200%', 'H200 SXM', 67.0, 494.7, 989.4, 989.4, 4800, 'NVIDIA H200 Tensor Core GPU data sheet'),
        (6, '%A100%PCIe%80GB%', 'A100 80GB PCIe', 19.5, 156.0, 312.0, 312.0, 1935, 'NVIDIA A100 Tensor Core GPU data sheet'),
        (7, '%A100%80GB%PCIe%', 'A100 80GB PCIe', 19.5, 156.0, 312.0, 312.0, 1935, 'NVIDIA A100 Tensor Core GPU data sheet'),
        (8, '%A100%80GB%', 'A100 80GB SXM4', 19.5, 156.0, 312.0, 312.0, 2039, 'NVIDIA A100 Tensor Core GPU data sheet'),
        (9, '%A100%', 'A100 40GB', 19.5, 156.0, 312.0, 312.0, 1555, 'NVIDIA A100 Tensor Core GPU data sheet'),
        (10, '%V100S%', 'V100S PCIe', 8.2, 16.4, 130.0, NULL, 1134, 'NVIDIA V100 Tensor Core GPU data sheet'),
        (11, '%V100%PCIE%', 'V100 PCIe', 7.0, 14.0, 112.0, NULL, 900, 'NVIDIA V100 Tensor Core GPU data sheet'),
        (12, '%V100%', 'V100 SXM2', 7.8, 15.7, 125.0, NULL, 900, 'NVIDIA V100 Tensor Core GPU data sheet'),
        (13, '%L40S%', 'L40S', NULL, 183.0, 362.0, 362.0, 864, 'NVIDIA L40S data sheet'),
        (14, '%NVIDIA L4', 'L4', NULL, 60.0, 121.0, 121.0, 300, 'NVIDIA L4 Tensor Core GPU data sheet'),
        (15, '%NVIDIA A10', 'A10', NULL, 62.5, 125.0, 125.0, 600, 'NVIDIA A10 Tensor Core GPU data sheet'),
        (16, '%T4', 'T4', NULL, 8.1, 65.0, NULL, 320, 'NVIDIA T4 Tensor Core GPU data sheet')
    ) AS sheet(priority, pattern, part, fp64, tf32, fp16, bf16, gbps, source)
    WHERE device_name ILIKE pattern
    ORDER BY priority LIMIT 1)
