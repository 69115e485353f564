SELECT
    rank, capture, step, op_label, op_name, iteration, link, transport,
    min(seq) AS first_seq,
    sum(dur_ns)::BIGINT AS time_ns,
    (sum(dur_ns) FILTER (WHERE main_plane))::BIGINT AS main_time_ns,
    sum(bytes)::BIGINT AS bytes,
    sum(bytes) / nullif(sum(dur_ns) / 1e9, 0) AS bandwidth_bytes_per_second,
    sum(wait_ns)::BIGINT AS wait_ns,
    (sum(wait_ns) FILTER (WHERE main_plane))::BIGINT AS main_wait_ns
FROM {{ ref('comm_link_task') }}
GROUP BY rank, capture, step, op_label, op_name, iteration, link, transport
