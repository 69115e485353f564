-- profpipe/export/timeline_tracks.py: the temp table timeline_moved, every slice the walk put on an "(overlapping)"
-- level (level > 0) with its track's keys, from the walk's Arrow tables timeline_moved_rows (track, start_ns, dur_ns,
-- level) and timeline_track_keys (track, rank, capture, lane, tid); equal slices of a track take the highest level.
SELECT k.rank, k.capture, k.lane, k.tid, m.start_ns, m.dur_ns, max(m.level) AS level
FROM timeline_moved_rows m
JOIN timeline_track_keys k USING (track)
GROUP BY ALL
