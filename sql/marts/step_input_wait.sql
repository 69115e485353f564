WITH waits AS (
    SELECT rank, capture, batch AS step, trace AS wait_source, coalesce(get_next_wait_ns, pipeline_ns) AS wait_ns,
           CASE WHEN trace = 'iterator' THEN since_previous_ns  -- the loop waited for batch n, then trained
                ELSE lead(ts_ns) OVER (PARTITION BY rank, capture, trace ORDER BY batch) - ts_ns END AS gap_ns
    FROM {{ ref('data_batch_stats') }}
    WHERE trace IN ('get_next', 'iterator') AND coalesce(get_next_wait_ns, pipeline_ns) IS NOT NULL
), chosen AS (  -- per rank, the device's get_next wait when there is one
    SELECT * FROM waits w
    WHERE wait_source = (SELECT CASE WHEN bool_or(x.wait_source = 'get_next') THEN 'get_next' ELSE 'iterator' END
                         FROM waits x WHERE x.rank = w.rank AND x.capture = w.capture)
), measured AS (
    SELECT c.rank, c.capture, c.step, c.wait_source, c.wait_ns, coalesce(p.total_ns, c.gap_ns) AS step_ns
    FROM chosen c LEFT JOIN {{ ref('step_phases') }} p ON p.rank = c.rank AND p.capture = c.capture AND p.step = c.step
)
SELECT *, wait_ns / nullif(step_ns, 0) AS wait_share,
       CASE WHEN wait_ns / nullif(step_ns, 0) > 0.2 THEN 'highly'
            WHEN wait_ns / nullif(step_ns, 0) >= 0.05 THEN 'moderately'
            WHEN step_ns > 0 THEN 'no' END AS input_bound
FROM measured
