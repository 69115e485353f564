SELECT
    rank,
    capture,
    device_id,
    device_type,
    framework,
    layout,
    source_dir,
    clock,
    host_to_clock_offset_ns,
    tick_hz,
    pid,
    metadata_json,
    epoch_offset_ns,
    epoch_offset_uncertainty_ns,
    host_epoch_offset_ns,
    host_epoch_offset_uncertainty_ns
FROM {{ source('run_info') }}
