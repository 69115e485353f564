SELECT
    rank,
    capture,
    step,
    start_ns,
    fp_ns,
    bp_ns,
    end_ns,
    fp_op,
    bp_op,
    end_ns - start_ns AS total_ns,
    fp_ns - start_ns AS iteration_interval_ns,
    coalesce(bp_ns, end_ns) - fp_ns AS fp_and_bp_ns,
    end_ns - bp_ns AS tail_ns
FROM {{ ref('int_step') }}
-- every step with a window, with or without its FP and BP points (an inference step, a point outside the
-- step): the phases a missing point bounds are NULL
WHERE start_ns IS NOT NULL AND end_ns IS NOT NULL
