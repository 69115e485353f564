-- hta_kernel_type(name): the kind HolisticTraceAnalysis (v0.6) gives a GPU activity by its name alone, the first
-- rule that matches: 'communication' (starts nccl, hip or hccl, or contains ncclKernel), 'memory' (starts
-- Memcpy, hipMemcpy, Memset, hipMemset or dma), 'computation' (none of: starts nccl, contains Memcpy, Memset, dma
-- or Sync, starts Stream Wait Event, contains cuda...LaunchKernel, starts runFunction, hip, job_exe, packet,
-- pe_exe, cpum_exe_subgraph, hccl or collective_subgraph_execution), else 'other' (Event Sync, Context Sync).
-- shared/reference/gpu-analyses.md section 1.0 rule 6; HTA's get_temporal_breakdown counts only 'computation'
-- as compute.
CREATE MACRO hta_kernel_type(name) AS CASE
    WHEN regexp_matches(name, '^(nccl|hip|hccl)') OR contains(name, 'ncclKernel') THEN 'communication'
    WHEN regexp_matches(name, '^((hip)?Memcpy|(hip)?Memset|dma)') THEN 'memory'
    WHEN NOT regexp_matches(name, '^(nccl|Stream Wait Event|runFunction|hip|job_exe|packet|pe_exe|cpum_exe_subgraph|hccl|collective_subgraph_execution)')
         AND NOT regexp_matches(name, 'Memcpy|Memset|dma|Sync|cuda.*LaunchKernel') THEN 'computation'
    ELSE 'other' END
