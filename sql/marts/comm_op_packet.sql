SELECT rank, capture, any_value(step) AS step, op_name, iteration, transport, packet_bytes,
       count(*) AS tasks, sum(dur_ns)::BIGINT AS time_ns
FROM (SELECT rank, capture, step, op_name, iteration, link_type AS transport, bytes AS packet_bytes, dur_ns
      FROM {{ ref('int_comm_task') }}
      WHERE task_type IN ('Memcpy', 'Reduce Inline') AND transport = 'SDMA' AND link_type IN ('HCCS', 'PCIE', 'SIO')
      UNION ALL
      SELECT rank, capture, step, op_name, iteration, 'RDMA', bytes, dur_ns
      FROM {{ ref('comm_link_task') }}
      WHERE transport = 'RDMA')
GROUP BY rank, capture, op_name, iteration, transport, packet_bytes
