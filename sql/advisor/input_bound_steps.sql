-- Steps that spend more than the threshold of their time waiting for their input batch: MindData's wait
-- (step_input_wait: the device's get_next wait in sink mode, the dataset iterator's pipeline time otherwise) and
-- PyTorch's DataLoader spans (step_gpu_time.dataloader_ns).
SELECT rank, capture, step, wait_share AS value, wait_source AS source, wait_ns, step_ns
FROM {{ ref('step_input_wait') }}
WHERE wait_share > {{ threshold }}
UNION ALL
SELECT rank, capture, step, dataloader_ns / step_ns AS value, 'dataloader' AS source, dataloader_ns::BIGINT, step_ns
FROM {{ ref('step_gpu_time') }}
WHERE step_ns > 0 AND dataloader_ns / step_ns > {{ threshold }}
