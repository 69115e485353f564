SELECT
    rank,
    capture,
    frame_index,
    frame_id,
    parent_index,
    tid,
    name,
    python_frame_kind(name) AS frame_kind,
    module_id,
    start_ns,
    dur_ns,
    start_ns + dur_ns AS end_ns
FROM {{ source('python_frame') }}
