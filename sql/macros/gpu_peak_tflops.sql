-- gpu_peak_tflops(device_name, dtype): a GPU's dense peak in TFLOP/s (no structured sparsity) for an op whose first
-- input has Kineto's Input type `dtype`, from NVIDIA's data sheets: 'float' on the CUDA cores (FP32; PyTorch runs
-- float matmuls there unless TF32 is allowed), 'c10::Half' / 'c10::BFloat16' on the tensor cores, 'double' FP64.
-- NULL for a device or type not listed (give --peak-tflops). Device names as deviceProperties writes them.
-- op_flops compares a float op with gpu_datasheet's TF32 peak instead where the trace shows it ran on the TF32
-- tensor cores (its kernels' names, or a rate above the FP32 peak), and a double op with the FP64 tensor cores'.
--   A100 (SXM and PCIe): FP64 9.7, FP32 19.5, FP16/BF16 312   H100 SXM (H100 80GB HBM3), H200: 34, 67, 989.4
--   H100 PCIe: 26, 51, 756.5                                    H100 NVL, H200 NVL: 30, 60, 835.5
--   V100 SXM2: 7.8, 15.7, 125 (FP16 only)   V100 PCIe: 7, 14, 112   V100S PCIe: 8.2, 16.4, 130
-- Sources (dense = the "with sparsity" figures halved): NVIDIA H100 Tensor Core GPU data sheet
-- (https://resources.nvidia.com/en-us-gpu-resources/h100-datasheet-24306; SXM 989.4 from the H100 architecture
-- whitepaper), H200 data sheet (https://nvdam.widen.net/s/nb5zzzsjdf/hpc-datasheet-sc23-h200-datasheet-3002446), A100
-- data sheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf), V100 data sheet
-- (volta-v100-datasheet-update-us-1165301-r5.pdf); gpu_datasheet's comment gives the full addresses. Fixed 2026-11:
-- H100 PCIe 756 -> 756.5 (1,513 / 2); H100 NVL and H200 NVL had the SXM's 34 / 67 / 989.4; V100 PCIe and V100S had
-- the V100 SXM2's figures.
CREATE MACRO gpu_peak_tflops(device_name, dtype) AS (
    WITH d AS (SELECT CASE
        WHEN device_name ILIKE '%A100%' THEN [9.7, 19.5, 312.0, 312.0]
        WHEN device_name ILIKE '%H100%PCIe%' THEN [26.0, 51.0, 756.5, 756.5]
        WHEN device_name ILIKE '%H100%NVL%' OR device_name ILIKE '%H200%NVL%' THEN [30.0, 60.0, 835.5, 835.5]
        WHEN device_name ILIKE '%H100%' OR device_name ILIKE '%H200%' THEN [34.0, 67.0, 989.4, 989.4]
        WHEN device_name ILIKE '%V100S%' THEN [8.2, 16.4, 130.0, NULL]
        WHEN device_name ILIKE '%V100%PCIE%' THEN [7.0, 14.0, 112.0, NULL]
        WHEN device_name ILIKE '%V100%' THEN [7.8, 15.7, 125.0, NULL]
        END AS peaks)
    SELECT CASE dtype WHEN 'double' THEN peaks[1] WHEN 'float' THEN peaks[2] WHEN 'c10::Half' THEN peaks[3]
                      WHEN 'c10::BFloat16' THEN peaks[4] END
    FROM d)
