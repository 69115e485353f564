-- profpipe/export/timeline_tracks.py: the temp table timeline_flow_level, per start time of a track whose innermost
-- slice the walk put on level > 0 that level (flow events there bind to it), with its track's keys; from the walk's
-- Arrow tables timeline_flow_rows (track, start_ns, level) and timeline_track_keys (track, rank, capture, lane, tid).
SELECT k.rank, k.capture, k.lane, k.tid, f.start_ns, f.level
FROM timeline_flow_rows f
JOIN timeline_track_keys k USING (track)
