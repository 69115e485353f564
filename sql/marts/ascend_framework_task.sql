-- task_desc and op_desc joined on the op name: an op with no task keeps a row of its own, after the tasks
WITH joined AS (
    SELECT coalesce(t.rank, o.rank) AS rank, t.task_id, t.stream_id, t.block_dim, t.graph_id, t.task_type,
           coalesce(t.op_name, o.op_name) AS op_name, coalesce(o.op_type, t.op_type) AS op_type, o.tensors_json,
           t.seq AS task_seq, o.seq AS op_seq
    FROM {{ ref('stg_task_desc') }} t
    FULL JOIN {{ ref('stg_op_desc') }} o ON o.rank = t.rank AND o.op_name = t.op_name
)
SELECT rank,
       row_number() OVER (PARTITION BY rank ORDER BY task_seq NULLS LAST, op_seq) AS position,
       task_id, stream_id, block_dim, op_name, op_short_name(op_name) AS short_name, op_type,
       op_subgraph(op_name) AS subgraph, task_type, graph_id, tensors_json
FROM joined
