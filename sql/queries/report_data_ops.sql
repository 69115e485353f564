-- Report, data pipeline page: each MindData op with its workers, CPU per worker and queue usage (data_op_stats).
SELECT rank, capture, op_id, op_name, op_type, num_workers, avg_cpus_per_worker, queue_usage_share,
       queue_empty_share, queue_capacity
FROM data_op_stats
ORDER BY rank, capture, pipeline_order NULLS LAST, op_id
