-- Report, communication page: bytes and bandwidth between each pair of ranks (comm_matrix) over every op.
SELECT src_rank, dst_rank, string_agg(DISTINCT transport, ', ' ORDER BY transport) AS transport, sum(bytes) AS bytes,
       sum(time_ns) / 1e6 AS time_ms, sum(bytes) / nullif(sum(time_ns) / 1e9, 0) AS bandwidth_bytes_per_second
FROM comm_matrix
GROUP BY src_rank, dst_rank
ORDER BY src_rank, dst_rank
