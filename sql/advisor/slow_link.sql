-- Communication links whose bandwidth (bytes over link time, summed over the op executions of a rank's capture,
-- comm_link_stats) is below the threshold times the median bandwidth of all links of the same transport (a rank's copy
-- to itself, link i-i, is its own class LOCAL: an on-chip copy, not a link); and the rank pairs of the Ascend tools'
-- own communication matrix (cluster_link_bandwidth) below the threshold times their transport's median, for the ranks
-- whose HCCL tasks were not read (a trimmed rank): a rank is judged once, from its events where it has them.
WITH links AS (
    SELECT rank, capture, link,
           CASE WHEN split_part(link, '-', 1) = split_part(link, '-', 2) THEN 'LOCAL' ELSE transport END AS transport,
           sum(bytes) AS bytes, sum(time_ns) AS time_ns, sum(bytes) / (sum(time_ns) / 1e9) AS bandwidth_bytes_per_second
    FROM {{ ref('comm_link_stats') }}
    WHERE bytes > 0
    GROUP BY ALL HAVING sum(time_ns) > 0
), medians AS (
    SELECT transport, median(bandwidth_bytes_per_second) AS median_bytes_per_second, count(*) AS links
    FROM links GROUP BY transport
)
SELECT l.rank, l.capture, NULL::BIGINT AS step, l.bandwidth_bytes_per_second / m.median_bytes_per_second AS value,
       l.link, l.transport, l.bandwidth_bytes_per_second, m.median_bytes_per_second, l.bytes, l.time_ns, m.links
FROM links l JOIN medians m USING (transport)
WHERE m.links > 1 AND l.bandwidth_bytes_per_second < {{ threshold }} * m.median_bytes_per_second
UNION ALL
SELECT src_rank::INTEGER, capture, NULL::BIGINT, median_ratio, src_rank || '-' || dst_rank, transport,
       bandwidth_bytes_per_second, median_bytes_per_second, bytes, time_ns, links
FROM {{ ref('cluster_link_bandwidth') }}
WHERE links > 1 AND bytes > 0 AND median_ratio < {{ threshold }}
  AND src_rank::INTEGER NOT IN (SELECT rank FROM links)
