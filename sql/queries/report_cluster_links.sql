-- Report, communication page: the cluster's links (cluster_link_bandwidth: the tools' communication_matrix in global
-- ranks, summed over steps) with their bytes, time and bandwidth against the median of their transport in the
-- capture; the $top slowest first (the rank-by-rank heatmap draws the same rows).
SELECT capture, src_rank, dst_rank, transport, bytes, time_ns / 1e6 AS time_ms, bandwidth_bytes_per_second,
       median_bytes_per_second, median_ratio, entries
FROM cluster_link_bandwidth
ORDER BY median_ratio NULLS LAST, capture, src_rank, dst_rank, transport
LIMIT $top
