-- The slices of the timeline's tracks that hold some nesting or overlap (a slice starts before an earlier one
-- ends), in the order profpipe/export/timeline_tracks.py walks them, each with its track's number; over the
-- exporter's temp view timeline_selected (rows of timeline_span). Flat tracks are left out: they need no walk.
WITH slices AS (
    SELECT rank, capture, lane, tid, start_ns, dur_ns FROM timeline_selected
    WHERE dur_ns IS NOT NULL AND category NOT IN ('flow', 'counter')
), nested AS (
    SELECT DISTINCT rank, capture, lane, tid
    FROM (SELECT *, max(start_ns::HUGEINT + dur_ns)
                        OVER (PARTITION BY rank, capture, lane, tid ORDER BY start_ns, dur_ns DESC
                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach_ns
          FROM slices)
    WHERE start_ns < reach_ns
)
SELECT dense_rank() OVER (ORDER BY rank, capture, lane, tid) AS track, rank, capture, lane, tid, start_ns, dur_ns
FROM slices SEMI JOIN nested USING (rank, capture, lane, tid)
ORDER BY rank, capture, lane, tid, start_ns, dur_ns DESC
