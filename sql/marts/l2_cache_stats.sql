SELECT
    rank,
    op_name,
    count(*) AS tasks,
    avg(hit_rate) AS avg_hit_rate,
    min(hit_rate) AS min_hit_rate,
    max(hit_rate) AS max_hit_rate,
    avg(victim_rate) AS avg_victim_rate,
    max(victim_rate) AS max_victim_rate
FROM {{ ref('stg_l2_cache_task') }}
GROUP BY rank, op_name
