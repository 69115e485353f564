WITH transfers AS (
    SELECT rank, op_label, op_name, iteration, coalesce(src_rank, dst_rank) AS src_rank,
           coalesce(dst_rank, src_rank) AS dst_rank, transport, bytes, dur_ns
    FROM {{ ref('int_comm_task') }}
    WHERE task_type IN ('Memcpy', 'Reduce Inline', 'RDMASend') AND bytes IS NOT NULL
)
SELECT
    op_label, src_rank, dst_rank, transport,
    list(DISTINCT rank ORDER BY rank) AS reported_by,
    count(DISTINCT (rank, op_name, iteration)) AS executions,
    count(*) AS tasks,
    sum(bytes)::BIGINT AS bytes,
    sum(dur_ns)::BIGINT AS time_ns,
    sum(bytes) / nullif(sum(dur_ns) / 1e9, 0) AS bandwidth_bytes_per_second
FROM transfers
GROUP BY op_label, src_rank, dst_rank, transport
