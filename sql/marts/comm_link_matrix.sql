WITH op_links AS (  -- one row per (op execution, link): its data-moving tasks between src and dst
    SELECT rank, capture, any_value(step) AS step, op_name, iteration, src AS src_rank, dst AS dst_rank,
           CASE WHEN src = dst THEN 'LOCAL' ELSE any_value(coalesce(link_type, transport)) END AS transport,
           sum(coalesce(bytes, 0))::BIGINT AS bytes, sum(dur_ns)::BIGINT AS time_ns
    FROM (SELECT *, coalesce(src_rank, dst_rank) AS src, coalesce(dst_rank, src_rank) AS dst
          FROM {{ ref('int_comm_task') }}
          WHERE task_type IN ('Memcpy', 'Reduce Inline', 'RDMASend'))
    GROUP BY rank, capture, op_name, iteration, src, dst
), typed AS (
    SELECT *, regexp_extract(lower(op_name),
                             'send|reduce|invalid|broadcast|allreduce|receive|allgather|reducescatter|scatter|alltoall|alltoallv|alltoallvc|batchsendrecv')
                  AS matrix_type,
              bytes / nullif(time_ns, 0) AS bandwidth
    FROM op_links
), ranked AS (
    SELECT *, row_number() OVER w - 1 AS k, count(*) OVER (PARTITION BY rank, capture, step, matrix_type, src_rank, dst_rank) AS n
    FROM typed
    WINDOW w AS (PARTITION BY rank, capture, step, matrix_type, src_rank, dst_rank
                 ORDER BY bandwidth DESC NULLS LAST, op_name, iteration)
), stats AS (
    SELECT rank, capture, step, matrix_type, src_rank, dst_rank, transport, s.stat, op_name, bytes, time_ns
    FROM ranked
    JOIN (VALUES ('top1', 0), ('middle', 1), ('bottom1', 2), ('bottom2', 3), ('bottom3', 4)) s(stat, which)
      ON k = CASE s.which WHEN 0 THEN 0 WHEN 1 THEN n // 2 ELSE n - (s.which - 1) END AND n >= s.which - 1
    UNION ALL
    SELECT rank, capture, step, matrix_type, src_rank, dst_rank, any_value(transport), 'total', NULL,
           sum(bytes)::BIGINT, sum(time_ns)::BIGINT
    FROM typed
    GROUP BY rank, capture, step, matrix_type, src_rank, dst_rank
)
SELECT *, bytes / nullif(time_ns, 0) AS bandwidth_gb_per_second
FROM stats
