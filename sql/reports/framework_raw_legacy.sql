SELECT f.rank, r.device_id, f.position, f.task_id, f.stream_id, f.block_dim, f.op_name AS full_op_name,
       f.short_name AS op_name, coalesce(f.op_type, '') AS op_type,
       CASE WHEN f.subgraph IN ('Default', 'Gradients') THEN f.subgraph ELSE '' END AS subgraph,
       coalesce(f.tensors_json, '') AS op_info
FROM {{ ref('ascend_framework_task') }} f
JOIN {{ ref('ascend_rank') }} r USING (rank)
