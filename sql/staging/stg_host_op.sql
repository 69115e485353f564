-- stg_host_op: one row per execution of a framework op, with the names MindSpore derives from the scope path.
-- Columns:
--   rank, capture, side, tid, op_name, start_ns, dur_ns: as in host_op.
--   end_ns: start_ns + dur_ns.
--   short_name: text after the last '/' (e.g. MatMul-op0).
--   op_type: short_name up to its last '-' (e.g. MatMul); the whole short_name when it has none.
--   subgraph: first element of the scope path (Default, Gradients, recompute_Default...).
SELECT
    rank,
    capture,
    side,
    tid,
    op_name,
    regexp_extract(op_name, '[^/]*$') AS short_name,
    CASE WHEN contains(regexp_extract(op_name, '[^/]*$'), '-')
         THEN regexp_extract(regexp_extract(op_name, '[^/]*$'), '^(.*)-[^-]*$', 1)
         ELSE regexp_extract(op_name, '[^/]*$') END AS op_type,
    split_part(op_name, '/', 1) AS subgraph,
    start_ns,
    dur_ns,
    start_ns + dur_ns AS end_ns
FROM host_op
