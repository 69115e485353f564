-- The memory capacity of each device a rank's capture names, where the dump states it: the deviceProperties
-- member of a PyTorch (Kineto) trace, whose totalGlobalMem is the CUDA device's global memory in bytes. The device
-- label is the allocator's of memory_curve ('cuda:<id>'), so memory_peak rows join it on (rank, capture, device).
WITH devices AS (
    SELECT rank, capture, unnest(json_extract(metadata_json, '$.deviceProperties[*]')) AS device
    FROM {{ ref('stg_run_info') }}
    WHERE json_valid(metadata_json) AND json_type(metadata_json, '$.deviceProperties') = 'ARRAY'
)
SELECT rank, capture, 'cuda:' || (device ->> 'id') AS device, any_value(device ->> 'name') AS device_name,
       max(try_cast(device ->> 'totalGlobalMem' AS BIGINT)) AS capacity_bytes
FROM devices
WHERE try_cast(device ->> 'id' AS BIGINT) >= 0 AND try_cast(device ->> 'totalGlobalMem' AS BIGINT) > 0
GROUP BY rank, capture, device ->> 'id'
