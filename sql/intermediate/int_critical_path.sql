-- The longest path of each critical-path window: the graph's edges, handed to profpipe/critical_path.py
-- (`computed_by`), which keeps the edges on the path and numbers them.
SELECT rank, capture, win, src, dst, edge_type, weight_ns FROM {{ ref('int_critical_path_graph') }}
