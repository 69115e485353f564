-- Each kernel, memcpy and memset with the host step that launched it: the step (int_step) whose [start, end) holds
-- the start of its launching runtime call (int_launched_activity), else its own start where the trace has no call.
-- Steps do not overlap, so an ASOF join gives each activity one step at most; one launched outside every step has
-- none and no row.
WITH steps AS (
    SELECT rank, capture, step, start_ns, end_ns FROM {{ ref('int_step') }}
    WHERE start_ns IS NOT NULL AND end_ns IS NOT NULL
), work AS (
    SELECT rank, capture, stream_id, kind, name, start_ns, dur_ns, call_start_ns,
           coalesce(call_start_ns, start_ns) AS placed_ns
    FROM {{ ref('int_launched_activity') }} WHERE kind IN ('kernel', 'memcpy', 'memset')
)
SELECT w.rank, w.capture, s.step, w.stream_id, w.kind, w.name, w.start_ns, w.dur_ns, w.call_start_ns
FROM work w ASOF JOIN steps s ON s.rank = w.rank AND s.capture = w.capture AND w.placed_ns >= s.start_ns
WHERE w.placed_ns < s.end_ns
