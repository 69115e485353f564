-- profpipe search: the candidates (the placeholder in the first CTE becomes a UNION ALL of the search_<mart> queries of the marts present)
-- matching $term, ranked exact > prefix > substring > fuzzy (subsequence, the LIKE pattern $fuzzy), then by device
-- time, own time, name and rank. An op several marts hold is one row: the first mart's type, calls and time.
WITH candidates AS ({candidates}),
merged AS (
    SELECT kind, name, rank, side, run,
           arg_min(type, priority) FILTER (WHERE type IS NOT NULL) AS type,
           arg_min(calls, priority) AS calls, arg_min(total_ns, priority) AS total_ns, max(device_ns) AS device_ns,
           string_agg(source, '+' ORDER BY priority) AS source
    FROM candidates
    GROUP BY kind, name, rank, side, run
),
named AS (  -- a kernel's type column is its op: not searched
    SELECT *, lower(name) AS l_name, lower(regexp_extract(name, '[^/]*$')) AS l_short,
           CASE WHEN kind = 'op' THEN lower(coalesce(type, '')) ELSE '' END AS l_type
    FROM merged
),
matched AS (
    SELECT *,
           CASE WHEN $term IN (l_name, l_short, l_type) THEN 0
                WHEN starts_with(l_name, $term) OR starts_with(l_short, $term) OR starts_with(l_type, $term) THEN 1
                WHEN contains(l_name, $term) OR contains(l_type, $term) THEN 2
                WHEN l_name LIKE $fuzzy ESCAPE '\' OR l_type LIKE $fuzzy ESCAPE '\' THEN 3
           END AS match_rank
    FROM named
)
SELECT kind, name, type, rank, calls, total_ns, device_ns, source, side, run, match_rank
FROM matched
WHERE match_rank IS NOT NULL
ORDER BY match_rank, device_ns DESC NULLS LAST, total_ns DESC NULLS LAST, name, rank, run
LIMIT $limit
