-- Steps whose tail (BP point to the step end: gradient all-reduce, optimizer update, step_phases.tail_ns) is
-- more than the threshold of the step.
SELECT rank, capture, step, tail_ns / total_ns AS value, tail_ns, total_ns, bp_op
FROM {{ ref('step_phases') }}
WHERE total_ns > 0 AND tail_ns / total_ns > {{ threshold }}
