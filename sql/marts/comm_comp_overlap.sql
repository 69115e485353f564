WITH classified AS (  -- HTA v0.6 get_kernel_type (shared/reference/gpu-analyses.md 1.0 rule 6), first match wins
    SELECT rank, capture, start_ns, start_ns + dur_ns AS end_ns,
           CASE WHEN regexp_matches(name, '^(nccl|hip|hccl)') OR contains(name, 'ncclKernel') THEN 'communication'
                WHEN regexp_matches(name, '^((hip)?Memcpy|(hip)?Memset|dma)') THEN 'memory'
                WHEN NOT (regexp_matches(name, '^(nccl|Stream Wait Event|runFunction|hip|job_exe|packet|pe_exe|cpum_exe_subgraph|hccl|collective_subgraph_execution)')
                          OR regexp_matches(name, 'Memcpy|Memset|dma|Sync|cuda.*LaunchKernel')) THEN 'computation'
                ELSE 'other' END AS category
    FROM {{ ref('stg_device_exec') }}
), intervals AS (
    SELECT {'rank': rank, 'capture': capture} AS grp, category, start_ns, end_ns
    FROM classified WHERE category IN ('computation', 'communication')
), pieces AS (
    SELECT grp.rank AS rank, grp.capture AS capture, end_ns - start_ns AS dur_ns,
           list_contains(categories, 'computation') AS computing, list_contains(categories, 'communication') AS communicating
    FROM interval_sweep(intervals)
), totals AS (
    SELECT rank, capture,
           coalesce(sum(dur_ns) FILTER (WHERE computing), 0)::BIGINT AS computation_ns,
           coalesce(sum(dur_ns) FILTER (WHERE communicating), 0)::BIGINT AS communication_ns,
           coalesce(sum(dur_ns) FILTER (WHERE computing AND communicating), 0)::BIGINT AS overlap_ns
    FROM pieces GROUP BY rank, capture
), counts AS (
    SELECT rank, capture, count(*) FILTER (WHERE category = 'computation') AS computation_kernels,
           count(*) FILTER (WHERE category = 'communication') AS communication_kernels
    FROM classified GROUP BY rank, capture
)
SELECT c.rank, c.capture, c.computation_kernels, c.communication_kernels,
       coalesce(t.computation_ns, 0) AS computation_ns, coalesce(t.communication_ns, 0) AS communication_ns,
       coalesce(t.overlap_ns, 0) AS overlap_ns,
       coalesce(t.communication_ns, 0) - coalesce(t.overlap_ns, 0) AS exposed_communication_ns,
       CASE WHEN t.communication_ns > 0 THEN t.overlap_ns / t.communication_ns END AS overlap_share
FROM counts c LEFT JOIN totals t USING (rank, capture)
