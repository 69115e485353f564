WITH points AS (
    SELECT
        rank,
        capture,
        step,
        max(ts_ns) FILTER (WHERE kind = 'step_start') AS start_ns,
        max(ts_ns) FILTER (WHERE kind = 'fp_start') AS fp_ns,
        max(ts_ns) FILTER (WHERE kind = 'bp_end') AS bp_ns,
        max(ts_ns) FILTER (WHERE kind = 'step_end') AS end_ns,
        max(op_name) FILTER (WHERE kind = 'fp_start') AS fp_op,
        max(op_name) FILTER (WHERE kind = 'bp_end') AS bp_op,
        max(op_name) FILTER (WHERE kind = 'step_end') AS end_op
    FROM {{ ref('stg_step_point') }}
    GROUP BY rank, capture, step
), options AS (
    SELECT max(value) FILTER (WHERE name = 'fp_op') AS fp_override,
           max(value) FILTER (WHERE name = 'bp_op') AS bp_override
    FROM {{ ref('stg_run_option') }}
), ops AS (
    SELECT rank, capture, op_name, start_ns, end_ns FROM {{ ref('int_device_exec') }} WHERE op_name IS NOT NULL
    UNION ALL
    SELECT rank, capture, op_name, start_ns, end_ns FROM {{ ref('stg_host_op') }}
), first_step AS (
    SELECT rank, capture, arg_min(fp_ns, step) AS fp_ns, arg_min(bp_ns, step) AS bp_ns
    FROM points WHERE fp_ns IS NOT NULL AND end_ns IS NOT NULL
    GROUP BY rank, capture
), ordered_ops AS (
    -- only the ops up to the first step's points are looked at: a prefix in start order keeps positions
    SELECT o.*, row_number() OVER (PARTITION BY o.rank, o.capture ORDER BY o.start_ns, o.op_name) AS position
    FROM ops o JOIN first_step f ON f.rank = o.rank AND f.capture = o.capture
    WHERE o.start_ns <= greatest(f.fp_ns, coalesce(f.bp_ns, f.fp_ns))
), derived AS (
    SELECT
        f.rank,
        f.capture,
        (SELECT arg_max(o.op_name, o.position) FROM ordered_ops o
         WHERE o.rank = f.rank AND o.capture = f.capture AND o.start_ns <= f.fp_ns) AS fp_op,
        (SELECT any_value(o.op_name) FROM ordered_ops o
         WHERE o.rank = f.rank AND o.capture = f.capture
           AND o.position = (SELECT count(*) FROM ops e
                             WHERE e.rank = f.rank AND e.capture = f.capture AND e.end_ns < f.bp_ns)) AS bp_op
    FROM first_step f
), chosen AS (
SELECT
    p.rank,
    p.capture,
    p.step,
    p.start_ns,
    -- an override op's runs belong to the step whose [start, end) holds their start
    CASE WHEN fp_override IS NULL THEN p.fp_ns
         ELSE (SELECT min(o.start_ns) FROM ops o WHERE o.rank = p.rank AND o.capture = p.capture AND o.op_name = fp_override
               AND o.start_ns >= p.start_ns AND o.start_ns < p.end_ns) END AS fp_ns,
    CASE WHEN bp_override IS NULL THEN p.bp_ns
         ELSE (SELECT max(o.end_ns) FROM ops o WHERE o.rank = p.rank AND o.capture = p.capture AND o.op_name = bp_override
               AND o.start_ns >= p.start_ns AND o.start_ns < p.end_ns) END AS bp_ns,
    p.end_ns,
    coalesce(fp_override, p.fp_op, d.fp_op) AS fp_op,
    coalesce(bp_override, p.bp_op, d.bp_op) AS bp_op,
    p.end_op,
    CASE WHEN fp_override IS NOT NULL THEN 'override'
         WHEN p.fp_op IS NOT NULL THEN 'trace'
         WHEN d.fp_op IS NOT NULL THEN 'derived' END AS point_source
FROM points p
CROSS JOIN options
LEFT JOIN derived d USING (rank, capture)
), inside AS (  -- an FP or BP point lies in its step, the BP point after the FP point: one that does not is no point
    SELECT *,
           coalesce(NOT (fp_ns < start_ns OR fp_ns > end_ns), true) AS fp_inside,
           coalesce(NOT (bp_ns < coalesce(fp_ns, start_ns) OR bp_ns > end_ns), true) AS bp_inside
    FROM chosen
)
SELECT * EXCLUDE (fp_inside, bp_inside) REPLACE (
    CASE WHEN fp_inside THEN fp_ns END AS fp_ns,
    CASE WHEN bp_inside THEN bp_ns END AS bp_ns,
    CASE WHEN fp_inside THEN fp_op END AS fp_op,
    CASE WHEN bp_inside THEN bp_op END AS bp_op,
    CASE WHEN fp_inside THEN point_source END AS point_source)
FROM inside
