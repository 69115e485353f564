WITH records AS (  -- component totals; 'ge': MindSpore's memory viewer pairs GE rows with the other components'
    SELECT *, component = 'GE' AS ge FROM {{ ref('stg_memory_record') }}
), paired AS (  -- in MindSpore's order (time, then file order: its stable sort of GE rows then its own), each
                -- GE row with the latest row of the other side before it, and the other way round
    SELECT *,
           last_value(CASE WHEN NOT ge THEN allocated_bytes END IGNORE NULLS) OVER w AS other_ms_allocated,
           last_value(CASE WHEN NOT ge THEN reserved_bytes END IGNORE NULLS) OVER w AS other_ms_reserved,
           last_value(CASE WHEN NOT ge THEN active_bytes END IGNORE NULLS) OVER w AS other_ms_active,
           last_value(CASE WHEN ge THEN allocated_bytes END IGNORE NULLS) OVER w AS other_ge_allocated,
           last_value(CASE WHEN ge THEN reserved_bytes END IGNORE NULLS) OVER w AS other_ge_reserved,
           last_value(CASE WHEN ge THEN active_bytes END IGNORE NULLS) OVER w AS other_ge_active,
           bool_or(ge) OVER (PARTITION BY rank, capture) AS has_ge,
           -- the framework's side: MindSpore, or torch_npu's PTA
           coalesce(max(CASE WHEN NOT ge THEN component END) OVER (PARTITION BY rank, capture), 'MindSpore') AS framework
    FROM records
    WHERE component <> 'APP'
    WINDOW w AS (PARTITION BY rank, capture ORDER BY ts_ns, seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
)
SELECT rank, capture, 'component' AS kind, component, device, ts_ns, seq, allocated_bytes, reserved_bytes, active_bytes
FROM records
UNION ALL  -- MindSpore+GE (torch_npu: PTA+GE): each row plus the latest row of the other side (0 before there is one)
SELECT rank, capture, 'component', framework || '+GE', NULL, ts_ns, seq,
       (coalesce(allocated_bytes, 0) + coalesce(CASE WHEN ge THEN other_ms_allocated ELSE other_ge_allocated END, 0))::BIGINT,
       (coalesce(reserved_bytes, 0) + coalesce(CASE WHEN ge THEN other_ms_reserved ELSE other_ge_reserved END, 0))::BIGINT,
       (coalesce(active_bytes, 0) + coalesce(CASE WHEN ge THEN other_ms_active ELSE other_ge_active END, 0))::BIGINT
FROM paired
WHERE has_ge
UNION ALL
SELECT rank, capture, 'module', component, device, ts_ns, seq, NULL, reserved_bytes, NULL
FROM {{ ref('stg_memory_module') }}
UNION ALL  -- PyTorch / Paddle allocator events: the bytes in use after each (int_memory_in_use)
SELECT rank, capture, 'allocator', 'allocator',
       device_type || CASE WHEN device_id >= 0 THEN ':' || device_id ELSE '' END, ts_ns, seq, in_use_bytes::BIGINT,
       total_reserved, NULL
FROM {{ ref('int_memory_in_use') }}
