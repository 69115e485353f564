-- The timeline's events, one JSON text each (profpipe/export/chrome_trace.py streams them), over temp tables of
-- the exporter: timeline_selected (the rows of the mart timeline_span it writes), timeline_clock (per rank,
-- capture and clock domain: the epoch shift, the clock group's base and the name suffix of an unaligned group;
-- profpipe/clocks.py decides them), and timeline_moved / timeline_flow_level (the "(overlapping)" level of the
-- slices that partly overlap another on their track, and of the flow ends bound to them;
-- profpipe/export/timeline_tracks.py). tier 0: always kept (metadata and the step trace); rel_ns: the event's
-- time since its group's base, in HUGEINT (no int64 subtraction or addition can overflow on any clock); keep_ns:
-- the time that decides whether a size limit keeps the event (a flow's later end, so no arrow is cut in half).
-- One process per rank and capture (pid: rank + 1, plus 1,000,000 per later capture), sorted by rank; in it one
-- thread per track, numbered and sorted by lane, track and level, named "<lane>: <track>".
WITH placed AS (
    SELECT s.*, coalesce(m.level, f.level, 0) AS level
    FROM timeline_selected s
    LEFT JOIN timeline_moved m
           ON s.category <> 'flow' AND m.rank = s.rank AND m.capture = s.capture AND m.lane = s.lane AND m.tid = s.tid
              AND m.start_ns = s.start_ns AND m.dur_ns = s.dur_ns
    LEFT JOIN timeline_flow_level f
           ON s.category = 'flow' AND f.rank = s.rank AND f.capture = s.capture AND f.lane = s.lane AND f.tid = s.tid
              AND f.start_ns = s.start_ns
), spans AS (
    SELECT s.*, (s.start_ns::HUGEINT + c.shift_ns) - c.base_ns AS rel_ns, c.suffix,
           1000000 * s.capture + s.rank + 1 AS pid
    FROM placed s JOIN timeline_clock c ON c.rank = s.rank AND c.capture = s.capture AND c.domain = s.clock_domain
), tracks AS (
    SELECT *, dense_rank() OVER (PARTITION BY pid ORDER BY lane, tid, level) AS track
    FROM (SELECT DISTINCT pid, rank, capture, lane, tid, level, process, thread, suffix FROM spans
          WHERE category <> 'counter')
), processes AS (  -- a process is named with its main clock's suffix; a track on another clock says its own
    SELECT pid, rank, capture, coalesce(min(suffix) FILTER (WHERE clock_domain = 'main'), min(suffix)) AS suffix
    FROM spans GROUP BY ALL
), flows AS (  -- a flow arrow is kept or cut whole: by the time of its later end
    SELECT args->>'id' AS flow_id, max(rel_ns) AS keep_ns FROM spans WHERE category = 'flow' GROUP BY ALL
), events AS (
    SELECT s.*, t.track, s.suffix <> p.suffix AS other_clock, coalesce(f.keep_ns, s.rel_ns) AS keep_ns
    FROM spans s JOIN processes p USING (pid)
    LEFT JOIN flows f ON s.category = 'flow' AND f.flow_id = s.args->>'id'
    LEFT JOIN tracks t ON t.pid = s.pid AND t.lane = s.lane AND t.tid = s.tid AND t.level = s.level
                          AND t.thread = s.thread
), meta AS (
    SELECT pid, 0 AS track, 'process_name' AS name,
           {'name': 'rank ' || rank || CASE WHEN capture > 0 THEN ' capture ' || capture ELSE '' END || suffix}::JSON AS args
    FROM processes
    UNION ALL
    SELECT pid, 0, 'process_sort_index', {'sort_index': (rank::BIGINT + 1) * 1000 + capture}::JSON
    FROM processes
    UNION ALL
    SELECT t.pid, t.track, 'thread_name',
           {'name': coalesce(t.process || ': ', '') || t.thread
                    || CASE t.level WHEN 0 THEN '' WHEN 1 THEN ' (overlapping)' ELSE ' (overlapping ' || t.level || ')' END
                    || CASE WHEN t.suffix <> p.suffix THEN t.suffix ELSE '' END}::JSON
    FROM tracks t JOIN processes p USING (pid)
    UNION ALL
    SELECT pid, track, 'thread_sort_index', {'sort_index': track}::JSON
    FROM tracks
)
SELECT 0 AS tier, NULL::HUGEINT AS rel_ns, NULL::HUGEINT AS keep_ns,
       to_json({'name': name, 'ph': 'M', 'pid': pid, 'tid': track, 'args': args}) AS event
FROM meta
UNION ALL
SELECT CASE WHEN lane = 0 THEN 0 ELSE 1 END, rel_ns, keep_ns,
       CASE WHEN category = 'counter'  -- a process-wide counter track per name (its clock said where not the process's)
            THEN to_json({'name': name || CASE WHEN other_clock THEN suffix ELSE '' END, 'ph': 'C', 'pid': pid,
                          'ts': rel_ns::DECIMAL(38, 0) * 0.001, 'args': args})
            WHEN category = 'flow' AND args->>'phase' = 's'  -- binds to the call's slice, which holds its start
            THEN to_json({'name': name, 'cat': 'ac2g', 'ph': 's', 'id': (args->>'id')::HUGEINT, 'pid': pid, 'tid': track,
                          'ts': rel_ns::DECIMAL(38, 0) * 0.001})
            WHEN category = 'flow'  -- binds to the slice that starts there (the activity)
            THEN to_json({'name': name, 'cat': 'ac2g', 'ph': 'f', 'bp': 'e', 'id': (args->>'id')::HUGEINT, 'pid': pid,
                          'tid': track, 'ts': rel_ns::DECIMAL(38, 0) * 0.001})
            ELSE to_json({'name': name, 'cat': category, 'ph': 'X', 'pid': pid, 'tid': track,
                          'ts': rel_ns::DECIMAL(38, 0) * 0.001,
                          'dur': dur_ns::DECIMAL(38, 0) * 0.001,
                          'args': args}) END
FROM events
