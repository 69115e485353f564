SELECT
    rank,
    op_name,
    count(*) AS tasks,
    avg(hit_share) AS avg_hit_share,
    min(hit_share) AS min_hit_share,
    max(hit_share) AS max_hit_share,
    avg(victim_ratio) AS avg_victim_ratio,
    max(victim_ratio) AS max_victim_ratio
FROM {{ ref('stg_l2_cache_task') }}
GROUP BY rank, op_name
