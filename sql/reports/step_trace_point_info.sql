SELECT s.rank, s.capture, r.device_id, arg_min(s.fp_op, s.step) AS fp_start, arg_min(s.bp_op, s.step) AS bp_end
FROM {{ ref('step_phases') }} s
JOIN {{ ref('ascend_rank') }} r USING (rank)
WHERE s.fp_op IS NOT NULL
GROUP BY s.rank, s.capture, r.device_id
