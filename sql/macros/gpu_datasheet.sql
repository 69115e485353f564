-- gpu_datasheet(device_name): a GPU's roofline peaks from NVIDIA's data sheets, by its deviceProperties name, as a
-- struct: device (the part matched), fp64_flop_per_second (FP64 tensor core where it has one), tf32_flop_per_second
-- (the most a float op can reach: TF32 tensor core where the GPU has one, else FP32), fp16_flop_per_second,
-- bf16_flop_per_second (dense tensor core: the data sheets' "with sparsity" figures halved), memory_bytes_per_second
-- (HBM / GDDR bandwidth, decimal TB/s and GB/s), source. NULL for a GPU not listed (never guessed). Dense TFLOPS and
-- bandwidth:
--   H100 SXM5 80GB ('H100 80GB HBM3', 'H100 SXM'): FP64 67, TF32 494.7, FP16/BF16 989.4, 3.35 TB/s (H100 data sheet)
--   H100 PCIe: 51, 378, 756, 2.0 TB/s (H100 data sheet)       H100 NVL: 60, 417.5, 835.5, 3.9 TB/s (H100 data sheet)
--   H200 (SXM): 67, 494.7, 989.4, 4.8 TB/s; H200 NVL: 60, 417.5, 835.5, 4.8 TB/s (H200 data sheet); a GH200 is not
--     listed (its names start 'NVIDIA GH200', which the H200 patterns do not match)
--   A100 SXM4 80GB: FP64 19.5, TF32 156, FP16/BF16 312, 2,039 GB/s; A100 80GB PCIe: 1,935 GB/s; A100 40GB (SXM4 and
--     PCIe): 1,555 GB/s (A100 data sheet)
--   V100 SXM2: FP64 7.8, FP32 15.7, FP16 125, no BF16, 900 GB/s; V100 PCIe: 7, 14, 112, 900 GB/s (V100 data sheet)
--   L4: FP32 30.3, TF32 60, FP16/BF16 121, 300 GB/s, FP64 not given (L4 data sheet)
--   L40S: FP32 91.6, TF32 183, FP16/BF16 362, 864 GB/s (L40S data sheet)
--   A10: FP32 31.2, TF32 62.5, FP16/BF16 125, 600 GB/s (A10 data sheet)
--   T4: FP32 8.1, FP16 65, no BF16, 320 GB/s (T4 data sheet)
CREATE MACRO gpu_datasheet(device_name) AS (
    SELECT {'device': part, 'fp64_flop_per_second': fp64 * 1e12, 'tf32_flop_per_second': tf32 * 1e12,
            'fp16_flop_per_second': fp16 * 1e12, 'bf16_flop_per_second': bf16 * 1e12,
            'memory_bytes_per_second': gbps * 1e9, 'source': source}
    FROM (VALUES
        (1, '%H100%PCIe%', 'H100 PCIe', 51.0, 378.0, 756.0, 756.0, 2000, 'NVIDIA H100 Tensor Core GPU data sheet'),
        (2, '%H100%NVL%', 'H100 NVL', 60.0, 417.5, 835.5, 835.5, 3900, 'NVIDIA H100 Tensor Core GPU data sheet'),
        (3, '%H100%', 'H100 SXM5', 67.0, 494.7, 989.4, 989.4, 3350, 'NVIDIA H100 Tensor Core GPU data sheet'),
        (4, 'NVIDIA H200%NVL%', 'H200 NVL', 60.0, 417.5, 835.5, 835.5, 4800, 'NVIDIA H200 Tensor Core GPU data sheet'),
        (5, 'NVIDIA H200%', 'H200 SXM', 67.0, 494.7, 989.4, 989.4, 4800, 'NVIDIA H200 Tensor Core GPU data sheet'),
        (5, '%A100%PCIe%80GB%', 'A100 80GB PCIe', 19.5, 156.0, 312.0, 312.0, 1935, 'NVIDIA A100 Tensor Core GPU data sheet'),
        (5, '%A100%80GB%PCIe%', 'A100 80GB PCIe', 19.5, 156.0, 312.0, 312.0, 1935, 'NVIDIA A100 Tensor Core GPU data sheet'),
        (6, '%A100%80GB%', 'A100 80GB SXM4', 19.5, 156.0, 312.0, 312.0, 2039, 'NVIDIA A100 Tensor Core GPU data sheet'),
        (7, '%A100%', 'A100 40GB', 19.5, 156.0, 312.0, 312.0, 1555, 'NVIDIA A100 Tensor Core GPU data sheet'),
        (8, '%V100%PCIE%', 'V100 PCIe', 7.0, 14.0, 112.0, NULL, 900, 'NVIDIA V100 Tensor Core GPU data sheet'),
        (9, '%V100%', 'V100 SXM2', 7.8, 15.7, 125.0, NULL, 900, 'NVIDIA V100 Tensor Core GPU data sheet'),
        (10, '%L40S%', 'L40S', NULL, 183.0, 362.0, 362.0, 864, 'NVIDIA L40S data sheet'),
        (11, '%NVIDIA L4', 'L4', NULL, 60.0, 121.0, 121.0, 300, 'NVIDIA L4 Tensor Core GPU data sheet'),
        (12, '%NVIDIA A10', 'A10', NULL, 62.5, 125.0, 125.0, 600, 'NVIDIA A10 Tensor Core GPU data sheet'),
        (13, '%T4', 'T4', NULL, 8.1, 65.0, NULL, 320, 'NVIDIA T4 Tensor Core GPU data sheet')
    ) AS sheet(priority, pattern, part, fp64, tf32, fp16, bf16, gbps, source)
    WHERE device_name ILIKE pattern
    ORDER BY priority LIMIT 1)
