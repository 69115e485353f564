-- Each host op that carries a Python stack (the innermost frame it ran in, host_op.frame_index, or its Call stack
-- arg) with the device time it launched itself (device_exec.op_index; the ops nested in it count their own).
SELECT h.rank, h.capture, h.op_index, h.frame_index, h.call_stack,
       coalesce(d.device_ns, 0) AS device_ns, coalesce(d.activities, 0) AS activities
FROM {{ ref('stg_host_op') }} h
LEFT JOIN (SELECT rank, capture, op_index, sum(dur_ns) AS device_ns, count(*) AS activities
           FROM {{ ref('stg_device_exec') }} WHERE op_index IS NOT NULL
           GROUP BY rank, capture, op_index) d USING (rank, capture, op_index)
WHERE h.frame_index IS NOT NULL OR h.call_stack IS NOT NULL
