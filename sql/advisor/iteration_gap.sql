-- Steps whose iteration gap (step start to the FP point: waiting for data and for the host to launch the step,
-- step_phases.iteration_interval_ns) is more than the threshold of the step.
SELECT rank, capture, step, iteration_interval_ns / total_ns AS value, iteration_interval_ns, total_ns, fp_op
FROM {{ ref('step_phases') }}
WHERE total_ns > 0 AND iteration_interval_ns / total_ns > {{ threshold }}
