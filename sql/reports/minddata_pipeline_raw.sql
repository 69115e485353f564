SELECT rank, capture, pipeline_order,
       op_id, op_type, num_workers,
       queue_sizes::VARCHAR AS output_queue_size,
       queue_average_size AS output_queue_average_size,
       queue_capacity AS output_queue_length,
       queue_usage_share AS output_queue_usage_rate,
       sampling_interval_ns / 1e6 AS sample_interval,
       pipeline_parent_id AS parent_id,
       pipeline_children AS children_id,
       pipeline_parent_id IS NULL AND queue_capacity IS NULL AS root_without_queue
FROM {{ ref('data_op_stats') }}
WHERE pipeline_order IS NOT NULL
