-- Ranks whose critical paths (critical_path_summary, summed over the rank's windows) spend a notable share of their
-- length waiting for kernels to be launched or for a stream's next activity to start, rather than in host ops or
-- device work: the launch and kernel-kernel share, with each part and the sync edges crossed.
SELECT rank, NULL::INTEGER AS capture, NULL::BIGINT AS step,
       sum(launch_ns + kernel_kernel_ns) / sum(path_length_ns) AS value,
       sum(launch_ns) / sum(path_length_ns) AS launch_share,
       sum(kernel_kernel_ns) / sum(path_length_ns) AS kernel_kernel_share,
       sum(cpu_ns) / sum(path_length_ns) AS cpu_share, sum(sync_edges) AS sync_edges, count(*) AS windows,
       sum(path_length_ns) AS path_length_ns
FROM {{ ref('critical_path_summary') }}
GROUP BY rank
HAVING sum(path_length_ns) > 0 AND sum(launch_ns + kernel_kernel_ns) / sum(path_length_ns) > {{ threshold }}
