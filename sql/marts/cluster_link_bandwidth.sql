-- Bandwidth per transport and rank pair over a capture (cluster_comm_matrix, links between two ranks), against the
-- median of the links of the same transport: the slow-link view of the tools' own matrix.
WITH links AS (
    SELECT capture, src_rank, dst_rank, transport, sum(bytes)::BIGINT AS bytes, sum(time_ns)::BIGINT AS time_ns,
           sum(bytes) / (sum(time_ns) / 1e9) AS bandwidth_bytes_per_second, count(*) AS entries
    FROM {{ ref('cluster_comm_matrix') }}
    WHERE transport <> 'LOCAL' AND src_rank IS NOT NULL AND dst_rank IS NOT NULL AND src_rank <> dst_rank
    GROUP BY capture, src_rank, dst_rank, transport
    HAVING sum(time_ns) > 0
)
SELECT *,
       median(bandwidth_bytes_per_second) OVER t AS median_bytes_per_second,
       count(*) OVER t AS links,
       bandwidth_bytes_per_second / nullif(median(bandwidth_bytes_per_second) OVER t, 0) AS median_ratio
FROM links
WINDOW t AS (PARTITION BY capture, transport)
