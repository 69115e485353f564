SELECT rank, family, collective_type, group_size, message_bytes,
       count(*) AS instances, sum(dur_ns)::BIGINT AS total_ns, avg(dur_ns) AS avg_ns, min(dur_ns) AS min_ns,
       max(dur_ns) AS max_ns,
       -- nccl-tests: the bandwidth of the average time (S / mean t), not the mean of the instances' bandwidths
       CASE WHEN avg(dur_ns) > 0 THEN message_bytes / (avg(dur_ns) / 1e9) END AS algorithm_bandwidth_bytes_per_second,
       CASE WHEN avg(dur_ns) > 0 THEN message_bytes / (avg(dur_ns) / 1e9) * any_value(bus_factor) END
           AS bus_bandwidth_bytes_per_second
FROM {{ ref('collective_exec') }}
WHERE timed_by <> 'cpu_op'
GROUP BY rank, family, collective_type, group_size, message_bytes
