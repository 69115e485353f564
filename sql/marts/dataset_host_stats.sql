-- MindSpore's dataset_<rank>.csv (_calculate_dataset_execution_time, 2.2): the Dataset module's spans grouped by
-- event, stage and custom info, in the order each group's first span ended
SELECT rank, capture, event, stage, custom_info, count(*) AS occurrences, sum(dur_ns)::BIGINT AS total_ns,
       avg(dur_ns) AS avg_ns, min(dur_ns) AS min_ns, max(dur_ns) AS max_ns, min(end_line) AS first_end_line
FROM {{ ref('host_span') }}
WHERE module = 'Dataset' AND kind = 'span'
GROUP BY rank, capture, event, stage, custom_info
