-- nsys cuda_gpu_mem_time_sum and cuda_gpu_mem_size_sum in one table, per rank: memcpy and memset
-- executions grouped by operation, labelled "[CUDA memcpy HtoD]" ... "[CUDA memset]" from the names the
-- readers write: Nsight Systems ("[CUDA memcpy Host-to-Device]"), Kineto ("Memcpy HtoD (Pageable ->
-- Device)") and MindSpore ("MemcpyH2D").
WITH ops AS (
    SELECT rank, dur_ns, bytes,
           CASE
               WHEN kind = 'memset' THEN '[CUDA memset]'
               WHEN regexp_matches(name, '^\[CUDA memcpy (Unified )?(Host|Device|Array|Peer)-to-(Host|Device|Array|Peer)\]$')
                   THEN regexp_replace(name, '^\[CUDA memcpy (Unified )?([HDAP])[a-z]+-to-([HDAP])[a-z]+\]$',
                                       '[CUDA memcpy \1\2to\3]')
               WHEN regexp_matches(name, '^Memcpy [A-Za-z]+( \(.*\))?$')
                   THEN regexp_replace(name, '^Memcpy ([A-Za-z]+).*$', '[CUDA memcpy \1]')
               WHEN regexp_matches(name, '^Memcpy[HDAP]2[HDAP]$')
                   THEN regexp_replace(name, '^Memcpy([HDAP])2([HDAP])$', '[CUDA memcpy \1to\2]')
               ELSE name
           END AS operation
    FROM {{ ref('stg_device_exec') }}
    WHERE kind IN ('memcpy', 'memset')
), stats AS (
    SELECT rank, operation, duration_stats(dur_ns) AS s,
           sum(bytes)::BIGINT AS total_bytes,
           avg(bytes) AS avg_bytes,
           median(bytes)::DOUBLE AS median_bytes,
           min(bytes) AS min_bytes,
           max(bytes) AS max_bytes,
           CASE WHEN count(bytes) > 0 THEN coalesce(stddev_samp(bytes), 0) END AS stddev_bytes,
           count(bytes) AS sized_count
    FROM ops
    GROUP BY rank, operation
)
SELECT
    rank,
    operation,
    s.total_ns / nullif(sum(s.total_ns) OVER (PARTITION BY rank), 0) AS time_share,
    s.total_ns,
    s.instances AS count,
    s.avg_ns,
    s.median_ns,
    s.min_ns,
    s.max_ns,
    s.stddev_ns,
    sized_count,
    total_bytes,
    avg_bytes,
    median_bytes,
    min_bytes,
    max_bytes,
    stddev_bytes
FROM stats
