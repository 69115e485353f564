-- Report, timeline page: a Gantt of each rank's tracks at step granularity. For the first $max_ranks ranks and the
-- first $max_steps steps of each (the Step Trace lane's step spans), each track's first start and last end inside
-- the step (ms after the rank's first step) and how many spans it holds; counters are left out.
WITH ranks AS (SELECT DISTINCT rank FROM timeline_span ORDER BY rank LIMIT $max_ranks),
steps AS (
    SELECT rank, capture, clock_domain, name AS step, start_ns, start_ns + dur_ns AS end_ns
    FROM timeline_span
    WHERE category = 'step' AND rank IN (SELECT rank FROM ranks)
    QUALIFY row_number() OVER (PARTITION BY rank, capture ORDER BY start_ns) <= $max_steps
),
origin AS (SELECT rank, capture, min(start_ns) AS t0 FROM steps GROUP BY rank, capture)
SELECT s.rank, s.capture, s.step, t.lane, t.process || ': ' || t.thread AS track,
       (min(greatest(t.start_ns, s.start_ns)) - o.t0) / 1e6 AS start_ms,
       (max(least(t.start_ns + t.dur_ns, s.end_ns)) - o.t0) / 1e6 AS end_ms, count(*) AS spans
FROM steps s
JOIN origin o ON o.rank = s.rank AND o.capture = s.capture
JOIN timeline_span t ON t.rank = s.rank AND t.capture = s.capture AND t.clock_domain = s.clock_domain
     AND t.start_ns < s.end_ns AND t.start_ns + t.dur_ns > s.start_ns AND t.category <> 'counter'
GROUP BY s.rank, s.capture, s.step, s.start_ns, t.lane, t.process, t.thread, o.t0
ORDER BY s.rank, s.capture, t.lane, track, start_ms
