-- Report, utilisation page: the ops and device activities with the most time on the critical path ($top), summed
-- over the rank's windows (critical_path_edge: its op and activity edges by the event HTA attributes them to), with
-- their share of the rank's summed path length.
WITH per_rank AS (
    SELECT rank, sum(path_length_ns) AS path_ns FROM critical_path_summary GROUP BY rank
)
SELECT e.rank, CASE WHEN e.edge_type = 'cpu_op' THEN 'host' ELSE 'device' END AS side, e.event_name,
       count(DISTINCT (e.capture, e.step)) AS windows, count(*) AS edges, sum(e.weight_ns) / 1e6 AS path_ms,
       sum(e.weight_ns) / nullif(any_value(p.path_ns), 0) AS share
FROM critical_path_edge e JOIN per_rank p USING (rank)
WHERE e.edge_type IN ('cpu_op', 'gpu_op') AND e.event_name IS NOT NULL
GROUP BY ALL
ORDER BY path_ms DESC, e.rank, side, e.event_name
LIMIT $top
