-- Report, communication page: each link (comm_link_stats) over its tasks: bytes, time and bandwidth, slowest first.
SELECT rank, link, transport, count(*) AS tasks, sum(bytes) AS bytes, sum(time_ns) / 1e6 AS time_ms,
       sum(bytes) / nullif(sum(time_ns) / 1e9, 0) AS bandwidth_bytes_per_second, sum(wait_ns) / 1e6 AS wait_ms
FROM comm_link_stats
GROUP BY rank, link, transport
ORDER BY bandwidth_bytes_per_second NULLS LAST, rank, link
LIMIT $top
