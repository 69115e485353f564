WITH events AS (  -- PyTorch / Paddle allocator events with an address: an allocation and the event after it at that address
    SELECT *,
           lead(bytes) OVER w AS next_bytes,
           lead(ts_ns) OVER w AS next_ts_ns
    FROM {{ ref('stg_memory_event') }}
    WHERE addr IS NOT NULL
    WINDOW w AS (PARTITION BY rank, capture, device_type, device_id, addr ORDER BY ts_ns, seq)
), allocations AS (
    SELECT * FROM events WHERE bytes > 0
), owned AS (  -- the host op on the allocating thread that started last at or before the allocation, if it still runs
    SELECT a.*, CASE WHEN o.start_ns + o.dur_ns >= a.ts_ns THEN o.op_name END AS owner
    FROM allocations a
    ASOF LEFT JOIN {{ ref('stg_host_op') }} o
        ON o.rank = a.rank AND o.capture = a.capture AND o.tid = a.tid AND o.start_ns <= a.ts_ns
)
SELECT rank, capture, component, device, owner, bytes, alloc_ns, release_ns
FROM {{ ref('stg_memory_block') }}
UNION ALL
SELECT rank, capture, 'allocator', device_type || CASE WHEN device_id >= 0 THEN ':' || device_id ELSE '' END, owner,
       bytes, ts_ns, CASE WHEN next_bytes = -bytes THEN next_ts_ns END
FROM owned
