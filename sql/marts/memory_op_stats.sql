SELECT
    rank,
    capture,
    component,
    owner,
    count(*) AS blocks,
    sum(bytes)::BIGINT AS total_bytes,
    max(bytes) AS max_bytes,
    avg(bytes) AS avg_bytes,
    count(release_ns) AS released_blocks,
    avg(release_ns - alloc_ns) AS avg_lifetime_ns,
    max(release_ns - alloc_ns) AS max_lifetime_ns,
    min(alloc_ns) AS first_alloc_ns
FROM {{ ref('int_memory_block') }}
GROUP BY rank, capture, component, owner
