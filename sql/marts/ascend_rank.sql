SELECT rank, min(device_id) AS device_id, min(tick_hz) AS tick_hz
FROM {{ ref('stg_run_info') }}
WHERE device_type = 'ascend' AND tick_hz IS NOT NULL
GROUP BY rank
