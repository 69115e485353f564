-- step_trace_raw_<device>_detail_time.csv (profpipe/export/ascend_reports.py): the line of each step of rank $rank's
-- profiling cycle $capture (report step_trace_raw), its values in the order of the style ($legacy: true for
-- --report-style legacy), as Python's csv module writes the ints (NULL: empty; lines end with \r\n).
SELECT concat(step_num, ',',
              array_to_string(list_transform(step_trace_values(phases, spans, $legacy), lambda x: coalesce(x::VARCHAR, '')), ','),
              chr(13), chr(10))
FROM step_trace_raw
WHERE rank = $rank AND capture = $capture
ORDER BY step_num
