-- The steps a run found but cannot measure (profpipe/step_health.py, after the merge, over the merged step_point):
-- one row per (rank, which marker is missing, at the capture's edge or not) with how many steps and the first.
-- A step lacks its end (no_end) or its start; at_edge: the last step lacks its end (the capture stopped inside it)
-- or the first lacks its start (it began before the capture); elsewhere a marker is missing inside the capture.
WITH steps AS (
    SELECT rank, capture, step,
           bool_or(kind = 'step_start') AS has_start, bool_or(kind = 'step_end') AS has_end
    FROM step_point WHERE kind IN ('step_start', 'step_end')
    GROUP BY ALL
), placed AS (
    SELECT *, step = max(step) OVER (PARTITION BY rank, capture) AS last,
           step = min(step) OVER (PARTITION BY rank, capture) AS first
    FROM steps
)
SELECT rank, NOT has_end AS no_end, (NOT has_end AND last) OR (NOT has_start AND first) AS at_edge,
       count(*) AS steps, min(step) AS example
FROM placed WHERE NOT (has_start AND has_end)
GROUP BY ALL ORDER BY ALL
