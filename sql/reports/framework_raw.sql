SELECT f.rank, r.device_id, f.position, f.task_id, f.stream_id, f.block_dim, f.op_name AS full_kernel_name,
       f.op_name, f.short_name AS kernel_name, coalesce(f.op_type, '') AS kernel_type,
       CASE WHEN f.subgraph IN ('Default', 'Gradients') THEN f.subgraph ELSE '' END AS subgraph,
       coalesce(f.tensors_json, '') AS op_info, f.graph_id
FROM {{ ref('ascend_framework_task') }} f
JOIN {{ ref('ascend_rank') }} r USING (rank)
