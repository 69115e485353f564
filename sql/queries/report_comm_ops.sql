-- Report, communication page: each communication op (comm_op_stats) over its executions on every rank: how many,
-- its time (ms) and the time spent waiting for peers.
SELECT op_label, count(*) AS executions, count(DISTINCT rank) AS ranks,
       sum(communication_cost_ns) / 1e6 AS total_ms, avg(communication_cost_ns) / 1e6 AS avg_ms,
       max(communication_cost_ns) / 1e6 AS max_ms, sum(wait_cost_ns) / 1e6 AS wait_ms
FROM comm_op_stats
GROUP BY op_label
ORDER BY total_ms DESC, op_label
