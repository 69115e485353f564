-- Memory curves whose peak (reserved where the curve has it, else allocated, memory_peak) comes within the
-- threshold of the device's capacity, where the dump states the capacity (device_memory_capacity).
SELECT p.rank, p.capture, NULL::BIGINT AS step,
       coalesce(p.peak_reserved_bytes, p.peak_allocated_bytes) / c.capacity_bytes AS value, p.device, c.device_name,
       p.peak_allocated_bytes, p.peak_reserved_bytes, c.capacity_bytes
FROM {{ ref('memory_peak') }} p
JOIN {{ ref('device_memory_capacity') }} c USING (rank, capture, device)
WHERE coalesce(p.peak_reserved_bytes, p.peak_allocated_bytes) / c.capacity_bytes > {{ threshold }}
