WITH RECURSIVE queue AS (
    SELECT rank, capture, op_id, count(*) AS queue_samples, list(size ORDER BY sample) AS queue_sizes,
           avg(size) AS queue_average_size, count(*) FILTER (WHERE size = 0) AS empty_samples
    FROM {{ ref('stg_queue_sample') }} WHERE queue = 'op_output'
    GROUP BY rank, capture, op_id
), cpu AS (
    SELECT rank, capture, op_id, count(*) AS cpu_samples, avg(coalesce(user_cpus, 0) + coalesce(sys_cpus, 0)) AS avg_cpus
    FROM {{ ref('stg_data_cpu_sample') }} WHERE scope = 'op' AND op_id >= 0
    GROUP BY rank, capture, op_id
), file_children AS (
    SELECT rank, capture, parent_id AS op_id, list(op_id ORDER BY child_index) AS child_ids
    FROM {{ ref('stg_data_op') }} WHERE parent_id IS NOT NULL
    GROUP BY rank, capture, parent_id
), children AS (
    SELECT rank, capture, pipeline_parent_id AS op_id,
           '[' || string_agg(op_id::VARCHAR, ', ' ORDER BY pipeline_order) || ']' AS pipeline_children
    FROM {{ ref('stg_data_op') }} WHERE pipeline_parent_id IS NOT NULL
    GROUP BY rank, capture, pipeline_parent_id
), first_child AS (
    SELECT c.rank, c.capture, c.parent_id AS op_id, c.op_id AS child_id, c.has_queue
    FROM {{ ref('stg_data_op') }} c WHERE c.child_index = 0
), descent AS (  -- from each op down its first children until one has queue metrics
    SELECT rank, capture, op_id, child_id, has_queue, 1 AS depth FROM first_child
    UNION ALL
    SELECT d.rank, d.capture, d.op_id, f.child_id, f.has_queue, d.depth + 1
    FROM descent d JOIN first_child f ON f.rank = d.rank AND f.capture = d.capture AND f.op_id = d.child_id
    WHERE NOT d.has_queue AND d.depth < 1000
), input_op AS (
    SELECT rank, capture, op_id, min(child_id) AS input_op_id FROM descent WHERE has_queue GROUP BY rank, capture, op_id
)
SELECT o.rank, o.capture, o.op_id, regexp_replace(o.op_type, 'Op$', '') AS op_name, o.op_type, o.num_workers,
       o.parent_id, fc.child_ids, o.pipeline_order, o.pipeline_parent_id, ch.pipeline_children, i.input_op_id,
       o.sampling_interval_ns, o.queue_capacity, q.queue_samples, q.queue_sizes, q.queue_average_size,
       q.queue_average_size / o.queue_capacity AS queue_usage_share,
       q.empty_samples AS queue_empty_samples, q.empty_samples / q.queue_samples AS queue_empty_share,
       c.cpu_samples, c.avg_cpus, c.avg_cpus / nullif(o.num_workers, 0) AS avg_cpus_per_worker
FROM {{ ref('stg_data_op') }} o
LEFT JOIN queue q USING (rank, capture, op_id)
LEFT JOIN cpu c USING (rank, capture, op_id)
LEFT JOIN file_children fc USING (rank, capture, op_id)
LEFT JOIN children ch USING (rank, capture, op_id)
LEFT JOIN input_op i USING (rank, capture, op_id)
