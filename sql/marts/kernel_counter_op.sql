-- A measured kernel's counter values with the op stack of the runtime call that launched it (HTA's
-- get_counter_data_with_operators, one row per counter instead of one column).
WITH kernels AS (
    SELECT DISTINCT rank, capture, range_index, launch_correlation
    FROM {{ ref('stg_kernel_counter') }}
    WHERE launch_correlation IS NOT NULL
), launch AS (  -- the launching call (the first with the correlation id, should a stitched trace repeat it)
    SELECT k.rank, k.capture, k.range_index, a.name AS launch_api, a.tid, a.start_ns, a.start_ns + a.dur_ns AS end_ns
    FROM kernels k
    JOIN {{ ref('stg_host_api') }} a
        ON a.rank = k.rank AND a.capture = k.capture AND a.correlation = k.launch_correlation
    QUALIFY row_number() OVER (PARTITION BY k.rank, k.capture, k.range_index ORDER BY a.start_ns) = 1
), stack AS (  -- HTA's cpu_op events open on the call's thread around it, outermost first
    SELECT l.rank, l.capture, l.range_index,
           list(o.op_name ORDER BY o.start_ns, o.dur_ns DESC, o.op_index) AS op_stack
    FROM launch l
    JOIN {{ ref('stg_host_op') }} o
        ON o.rank = l.rank AND o.capture = l.capture AND o.tid = l.tid
       AND o.start_ns <= l.start_ns AND o.end_ns >= l.end_ns
    WHERE o.side = 'Host'
      AND (o.category = 'cpu_op' OR (o.category = 'backward' AND o.op_name LIKE 'autograd::engine::evaluate_function:%'))
    GROUP BY ALL
)
SELECT
    c.rank,
    c.capture,
    c.range_index,
    c.kernel_name,
    c.start_ns,
    c.dur_ns,
    c.launch_correlation,
    l.launch_api,
    s.op_stack[1] AS top_level_op,
    s.op_stack[-1] AS bottom_level_op,
    s.op_stack,
    c.counter,
    c.value
FROM {{ ref('stg_kernel_counter') }} c
LEFT JOIN launch l USING (rank, capture, range_index)
LEFT JOIN stack s USING (rank, capture, range_index)
