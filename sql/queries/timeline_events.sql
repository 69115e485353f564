-- The timeline's events, one JSON text each (profpipe/export/chrome_trace.py streams them), over two temp
-- tables of the exporter: timeline_selected (the rows of the mart timeline_span it writes) and
-- timeline_clock (per rank, capture and clock domain: the epoch shift, the clock group's base and the name
-- suffix of an unaligned group; profpipe/clocks.py decides them). tier 0: always kept (metadata and the
-- step trace); rel_ns: the event's time since its group's base, in HUGEINT (no int64 subtraction or
-- addition can overflow on any clock). pid: one per rank, capture and lane (capture 0 keeps the
-- msprof-like 10 * (rank + 1) + lane; a later capture adds 1,000,000 per capture).
WITH spans AS (
    SELECT s.*, (s.start_ns::HUGEINT + c.shift_ns) - c.base_ns AS rel_ns, c.suffix,
           1000000 * s.capture + 10 * (s.rank + 1) + s.lane AS pid
    FROM timeline_selected s JOIN timeline_clock c ON c.rank = s.rank AND c.capture = s.capture AND c.domain = s.clock_domain
), meta AS (
    SELECT pid, 0 AS tid, 'process_name' AS name,
           {'name': process || ' rank' || rank || CASE WHEN capture > 0 THEN ' capture' || capture ELSE '' END
                    || min(suffix)}::JSON AS args
    FROM spans WHERE process IS NOT NULL GROUP BY rank, capture, lane, pid, process
    UNION ALL
    SELECT DISTINCT pid, 0, 'process_sort_index', {'sort_index': pid}::JSON
    FROM spans
    UNION ALL
    SELECT DISTINCT pid, tid, 'thread_name', {'name': thread}::JSON
    FROM spans
)
SELECT 0 AS tier, NULL::HUGEINT AS rel_ns,
       to_json({'name': name, 'ph': 'M', 'pid': pid, 'tid': tid, 'args': args}) AS event
FROM meta
UNION ALL
SELECT CASE WHEN lane = 0 THEN 0 ELSE 1 END, rel_ns,
       CASE WHEN category = 'counter'
            THEN to_json({'name': name, 'ph': 'C', 'pid': pid, 'tid': tid,
                          'ts': rel_ns::DECIMAL(38, 0) * 0.001, 'args': args})
            WHEN category = 'flow' AND args->>'phase' = 's'  -- binds to the call's slice, which holds its start
            THEN to_json({'name': name, 'cat': 'ac2g', 'ph': 's', 'id': (args->>'id')::HUGEINT, 'pid': pid, 'tid': tid,
                          'ts': rel_ns::DECIMAL(38, 0) * 0.001})
            WHEN category = 'flow'  -- binds to the slice that starts there (the activity)
            THEN to_json({'name': name, 'cat': 'ac2g', 'ph': 'f', 'bp': 'e', 'id': (args->>'id')::HUGEINT, 'pid': pid,
                          'tid': tid, 'ts': rel_ns::DECIMAL(38, 0) * 0.001})
            ELSE to_json({'name': name, 'cat': category, 'ph': 'X', 'pid': pid, 'tid': tid,
                          'ts': rel_ns::DECIMAL(38, 0) * 0.001,
                          'dur': dur_ns::DECIMAL(38, 0) * 0.001,
                          'args': args}) END
FROM spans
