-- The timeline's clocks (profpipe/export/chrome_trace.py, for profpipe/clocks.py's resolve): per rank, profiling
-- cycle and clock domain of the exporter's temp view timeline_selected (rows of timeline_span), how many timed
-- events it holds and their first and last start.
SELECT rank, capture, clock_domain, count(*), min(start_ns), max(start_ns)
FROM timeline_selected
WHERE start_ns IS NOT NULL
GROUP BY ALL
ORDER BY ALL
