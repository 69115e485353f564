-- The longest path of each critical-path window: the graph's edges that run forward in time (the node they enter is
-- no earlier than the one they leave), handed to profpipe/critical_path.py (`computed_by`), which keeps the edges on
-- the path and numbers them. An edge back in time (a kernel that starts before the one before it on its stream ends,
-- as programmatic dependent launch lets it; a kernel stamped before its launching call; a sync's call that returns
-- before the activity it waits for ends) weighs 0 in the graph, and a path through it would count the time it goes
-- back twice: longer than the span from its first node to its last, which no path running forward in time can be.
WITH node AS (
    SELECT rank, capture, win, ev, start_ns, end_ns FROM {{ ref('int_critical_path_event') }} WHERE ev IS NOT NULL
)
SELECT g.rank, g.capture, g.win, g.src, g.dst, g.edge_type, g.weight_ns
FROM {{ ref('int_critical_path_graph') }} g
JOIN node s ON s.rank = g.rank AND s.capture = g.capture AND s.win = g.win AND s.ev = g.src // 2
JOIN node t ON t.rank = g.rank AND t.capture = g.capture AND t.win = g.win AND t.ev = g.dst // 2
WHERE CASE WHEN g.dst % 2 = 1 THEN t.end_ns ELSE t.start_ns END >= CASE WHEN g.src % 2 = 1 THEN s.end_ns ELSE s.start_ns END
