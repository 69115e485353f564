-- (ascend_)timeline_summary_<device>.json (profpipe/export/ascend_reports.py): of rank $rank's timeline events
-- (report ascend_timeline_display), the streams its AI Core tasks run on and the distinct names MindSpore counts
-- (tasks' op names and AI CPU names, a missing name counted once, as Python's set counts None). The exporter adds
-- the AI CPU stream, the executions and the total time (a float sum in timeline order).
SELECT count(DISTINCT tid) FILTER (WHERE lane = 0) AS streams,
       count(DISTINCT coalesce(op_name, chr(0))) FILTER (WHERE lane = 0)
       + count(DISTINCT coalesce(name, chr(0))) FILTER (WHERE lane = 2) AS op_names
FROM ascend_timeline_display
WHERE rank = $rank
