SELECT rank, capture, module, event, stage, any_value(name) AS name,
       count(*) FILTER (WHERE kind = 'span') AS spans,
       coalesce(sum(dur_ns) FILTER (WHERE kind = 'span'), 0)::BIGINT AS total_ns,
       avg(dur_ns) FILTER (WHERE kind = 'span') AS avg_ns,
       min(dur_ns) FILTER (WHERE kind = 'span') AS min_ns,
       max(dur_ns) FILTER (WHERE kind = 'span') AS max_ns,
       count(*) FILTER (WHERE kind = 'instant') AS instants,
       count(*) FILTER (WHERE kind = 'open_start') AS open_starts,
       count(*) FILTER (WHERE kind = 'orphan_end') AS orphan_ends,
       coalesce(sum(dur_ns) FILTER (WHERE kind = 'span'), 0)
           / nullif(sum(sum(dur_ns) FILTER (WHERE kind = 'span')) OVER (PARTITION BY rank, capture, module), 0)
           AS module_share,
       min(coalesce(start_ns, end_ns)) AS first_ns
FROM {{ ref('host_span') }}
GROUP BY rank, capture, module, event, stage
