-- gpu_peak_tflops(device_name, dtype): a GPU's dense peak in TFLOP/s (no structured sparsity) for an op whose first
-- input has Kineto's Input type `dtype`, from NVIDIA's data sheets: 'float' on the CUDA cores (FP32; PyTorch runs
-- float matmuls there unless TF32 is allowed), 'c10::Half' / 'c10::BFloat16' on the tensor cores, 'double' FP64.
-- NULL for a device or type not listed (give --peak-tflops). Device names as deviceProperties writes them.
--   A100 (SXM and PCIe): FP64 9.7, FP32 19.5, FP16/BF16 312   H100 SXM (H100 80GB HBM3), H200: 34, 67, 989.4
--   H100 PCIe: 26, 51, 756                                      V100: 7.8, 15.7, 125 (FP16 only)
CREATE MACRO gpu_peak_tflops(device_name, dtype) AS (
    WITH d AS (SELECT CASE
        WHEN device_name ILIKE '%A100%' THEN [9.7, 19.5, 312.0, 312.0]
        WHEN device_name ILIKE '%H100%PCIe%' THEN [26.0, 51.0, 756.0, 756.0]
        WHEN device_name ILIKE '%H100%' OR device_name ILIKE '%H200%' THEN [34.0, 67.0, 989.4, 989.4]
        WHEN device_name ILIKE '%V100%' THEN [7.8, 15.7, 125.0, NULL]
        END AS peaks)
    SELECT CASE dtype WHEN 'double' THEN peaks[1] WHEN 'float' THEN peaks[2] WHEN 'c10::Half' THEN peaks[3]
                      WHEN 'c10::BFloat16' THEN peaks[4] END
    FROM d)
