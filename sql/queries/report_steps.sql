-- Report, step trace page: every step of every rank (the first $max_steps of each rank and capture) with its
-- phases in ms (step_phases), the communication left over after overlap, the slowest rank of the step and whether
-- this rank is more than 5 % slower than the step's fastest (cluster_step_phases), and the wait for input (step_input_wait; input_bound: more than 20 % of the step waited,
-- TensorBoard's 'highly'). A rank with input logs but no step trace
-- still gives its steps, with the phases NULL. unsplit_ms: the part of a step without an FP point (an inference
-- step with no framework op) that its phases cannot split (the step up to its BP point, or all of it).
WITH keys AS (
    SELECT rank, capture, step FROM step_phases
    UNION SELECT rank, capture, step FROM step_input_wait
)
SELECT k.rank, k.capture, k.step,
       p.total_ns / 1e6 AS total_ms, p.iteration_interval_ns / 1e6 AS iteration_interval_ms,
       p.fp_and_bp_ns / 1e6 AS fp_and_bp_ms, p.tail_ns / 1e6 AS tail_ms,
       CASE WHEN p.fp_ns IS NULL THEN (p.total_ns - coalesce(p.tail_ns, 0)) / 1e6 END AS unsplit_ms,
       c.pure_communication_ns / 1e6 AS communication_ms, c.slowest_rank,
       coalesce(c.is_slow, false) AS is_slow,
       w.wait_ns / 1e6 AS input_wait_ms, coalesce(w.input_bound = 'highly', false) AS input_bound
FROM keys k
LEFT JOIN step_phases p USING (rank, capture, step)
LEFT JOIN cluster_step_phases c USING (rank, capture, step)
LEFT JOIN step_input_wait w USING (rank, capture, step)
QUALIFY row_number() OVER (PARTITION BY k.rank, k.capture ORDER BY k.step) <= $max_steps
ORDER BY k.rank, k.capture, k.step
