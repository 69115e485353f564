WITH transfers AS (  -- the data-moving tasks (RDMA: each RDMASend, RDMASend, Notify Wait payload of comm_link_task)
    SELECT rank, capture, step, op_name, iteration, transport, link_type, bytes, dur_ns
    FROM {{ ref('int_comm_task') }}
    WHERE task_type IN ('Memcpy', 'Reduce Inline') AND transport = 'SDMA'
    UNION ALL
    SELECT rank, capture, step, op_name, iteration, 'RDMA', NULL, bytes, dur_ns
    FROM {{ ref('comm_link_task') }}
    WHERE transport = 'RDMA'
), by_transport AS (
    SELECT rank, capture, step, op_name, iteration,
           CASE WHEN transport = 'RDMA' THEN 'RDMA' ELSE link_type END AS transport, bytes, dur_ns
    FROM transfers
    WHERE transport = 'RDMA' OR link_type IN ('HCCS', 'PCIE', 'SIO')
    UNION ALL  -- SDMA: every SDMA copy over a link between chips (HCCS + PCIE + SIO; ON_CHIP copies left out)
    SELECT rank, capture, step, op_name, iteration, 'SDMA', bytes, dur_ns
    FROM transfers
    WHERE transport = 'SDMA' AND link_type IN ('HCCS', 'PCIE', 'SIO')
)
SELECT rank, capture, any_value(step) AS step, op_name, iteration, transport,
       count(*) AS tasks,
       coalesce(sum(bytes), 0)::BIGINT AS bytes,
       sum(dur_ns)::BIGINT AS time_ns,
       coalesce(sum(bytes), 0) / nullif(sum(dur_ns), 0) AS bandwidth_gb_per_second
FROM by_transport
GROUP BY rank, capture, op_name, iteration, transport
