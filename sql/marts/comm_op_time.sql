WITH tasks AS (
    SELECT *, min(plane) FILTER (WHERE task_type = 'Notify Wait')
                  OVER (PARTITION BY rank, capture, op_name, iteration) AS master_plane
    FROM {{ ref('int_comm_task') }}
), master AS (
    SELECT *, lag(task_type, 1) OVER w AS prev1, lag(task_type, 2) OVER w AS prev2,
           lag(task_type, 3) OVER w AS prev3, lag(task_type, 4) OVER w AS prev4
    FROM tasks
    WHERE plane = master_plane
    WINDOW w AS (PARTITION BY rank, capture, op_name, iteration ORDER BY start_ns, seq)
), classed AS (
    SELECT *,
           CASE WHEN task_type IN ('Memcpy', 'Reduce Inline', 'RDMASend') THEN 'transit'
                WHEN task_type = 'Notify Wait' AND prev1 = 'RDMASend'
                     AND (prev2 = 'RDMASend' OR (prev2 = 'Notify Wait' AND prev3 = 'RDMASend' AND prev4 = 'RDMASend'))
                     THEN 'transit'
                WHEN task_type = 'Notify Wait' THEN 'wait' END AS part
    FROM master
), first_transit AS (
    SELECT *, min(start_ns) FILTER (WHERE part = 'transit')
                  OVER (PARTITION BY rank, capture, op_name, iteration) AS first_transit_ns
    FROM classed
), parts AS (
    SELECT rank, capture, op_name, iteration,
           coalesce(sum(dur_ns) FILTER (WHERE part = 'transit'), 0)::BIGINT AS transit_ns,
           coalesce(sum(dur_ns) FILTER (WHERE part = 'wait'), 0)::BIGINT AS wait_ns,
           coalesce(sum(dur_ns) FILTER (WHERE part = 'wait' AND (first_transit_ns IS NULL OR start_ns < first_transit_ns)),
                    0)::BIGINT AS synchronization_ns
    FROM first_transit
    GROUP BY rank, capture, op_name, iteration
), executions AS (
    SELECT rank, capture, any_value(step) AS step, any_value(op_type) AS op_type, op_name, iteration,
           min(start_ns) AS first_task_ns, max(start_ns + dur_ns) AS last_task_end_ns, max(master_plane) AS master_plane
    FROM tasks
    GROUP BY rank, capture, op_name, iteration
), op_rows AS (  -- the whole op as the device timeline has it (Ascend: the HCCL op row)
    SELECT rank, capture, name AS op_name, start_ns, dur_ns,
           row_number() OVER (PARTITION BY rank, capture, name ORDER BY start_ns) AS iteration
    FROM {{ ref('stg_device_exec') }}
    WHERE name IN (SELECT op_name FROM executions)
)
SELECT e.rank, e.capture, e.step, e.op_name, e.op_type, e.iteration, e.master_plane,
       coalesce(o.start_ns, e.first_task_ns) AS start_ns,
       coalesce(o.dur_ns, e.last_task_end_ns - e.first_task_ns) AS elapse_ns,
       p.transit_ns, p.wait_ns, p.synchronization_ns,
       coalesce(o.dur_ns, e.last_task_end_ns - e.first_task_ns) - p.transit_ns - p.wait_ns AS idle_ns,
       round(p.wait_ns / nullif(p.wait_ns + p.transit_ns, 0), 4) AS wait_share,
       round(p.synchronization_ns / nullif(p.synchronization_ns + p.transit_ns, 0), 4) AS synchronization_share
FROM executions e
JOIN parts p USING (rank, capture, op_name, iteration)
LEFT JOIN op_rows o USING (rank, capture, op_name, iteration)
