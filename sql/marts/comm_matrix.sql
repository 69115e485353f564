-- comm_matrix: one row per (op_label, src_rank, dst_rank, transport) over all ranks and steps: the data one rank sent to another for a communication op.
-- Columns:
--   op_label: the communication op (step-trace name, else its own name); src_rank, dst_rank: the link's sides
--     as the tasks give them (a missing side takes the other's rank); transport: SDMA, RDMA, HCCS, PCIE, ...
--   reported_by: ranks whose traces hold the transfers.  executions: op executions involved.
--   tasks: data-moving tasks (Memcpy, Reduce Inline, RDMASend).
--   bytes: data moved.  time_ns: summed task time.  bandwidth_gb_s = bytes / time_ns (GB/s, 1 GB = 1e9 bytes).
WITH transfers AS (
    SELECT rank, op_label, op_name, iteration, coalesce(src_rank, dst_rank) AS src_rank,
           coalesce(dst_rank, src_rank) AS dst_rank, transport, bytes, dur_ns
    FROM stg_comm_task
    WHERE task_type IN ('Memcpy', 'Reduce Inline', 'RDMASend') AND bytes IS NOT NULL
)
SELECT
    op_label, src_rank, dst_rank, transport,
    list(DISTINCT rank ORDER BY rank) AS reported_by,
    count(DISTINCT (rank, op_name, iteration)) AS executions,
    count(*) AS tasks,
    sum(bytes)::BIGINT AS bytes,
    sum(dur_ns)::BIGINT AS time_ns,
    sum(bytes) / nullif(sum(dur_ns), 0) AS bandwidth_gb_s
FROM transfers
GROUP BY op_label, src_rank, dst_rank, transport
