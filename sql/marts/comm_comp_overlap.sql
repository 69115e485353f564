WITH classified AS (  -- HTA's kernel types (macro hta_kernel_type); hta: the activities HTA keeps, in its µs
    SELECT 'profpipe' AS definition, rank, capture, start_ns, start_ns + dur_ns AS end_ns, hta_kernel_type(name) AS category
    FROM {{ ref('stg_device_exec') }}
    UNION ALL
    SELECT 'hta', rank, capture, start_ns, end_ns, hta_type FROM {{ ref('int_hta_gpu_event') }}
), intervals AS (
    SELECT {'rank': rank, 'capture': capture, 'definition': definition} AS grp, category, start_ns, end_ns
    FROM classified WHERE category IN ('computation', 'communication')
), pieces AS (
    SELECT grp.rank AS rank, grp.capture AS capture, grp.definition AS definition, end_ns - start_ns AS dur_ns,
           list_contains(categories, 'computation') AS computing, list_contains(categories, 'communication') AS communicating
    FROM interval_sweep(intervals)
), totals AS (
    SELECT rank, capture, definition,
           coalesce(sum(dur_ns) FILTER (WHERE computing), 0)::BIGINT AS computation_ns,
           coalesce(sum(dur_ns) FILTER (WHERE communicating), 0)::BIGINT AS communication_ns,
           coalesce(sum(dur_ns) FILTER (WHERE computing AND communicating), 0)::BIGINT AS overlap_ns
    FROM pieces GROUP BY rank, capture, definition
), counts AS (
    SELECT rank, capture, definition, count(*) FILTER (WHERE category = 'computation') AS computation_kernels,
           count(*) FILTER (WHERE category = 'communication') AS communication_kernels
    FROM classified GROUP BY rank, capture, definition
)
SELECT c.rank, c.capture, c.definition, c.computation_kernels, c.communication_kernels,
       coalesce(t.computation_ns, 0) AS computation_ns, coalesce(t.communication_ns, 0) AS communication_ns,
       coalesce(t.overlap_ns, 0) AS overlap_ns,
       coalesce(t.communication_ns, 0) - coalesce(t.overlap_ns, 0) AS exposed_communication_ns,
       CASE WHEN t.communication_ns > 0 THEN t.overlap_ns / t.communication_ns END AS overlap_share
FROM counts c LEFT JOIN totals t USING (rank, capture, definition)
