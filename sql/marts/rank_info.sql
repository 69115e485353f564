SELECT rank, capture, device_id, device_type, framework, layout, source_dir, clock, tick_hz, pid,
       epoch_offset_ns, epoch_offset_uncertainty_ns, host_epoch_offset_ns, host_epoch_offset_uncertainty_ns
FROM {{ ref('stg_run_info') }}
