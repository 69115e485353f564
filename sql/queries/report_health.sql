-- Report, overview page (profpipe/report/pages.py): the trace-health ledger (trace_health), the checks that touched
-- most rows first.
SELECT rank, check_name, action, events, rows, message
FROM trace_health
ORDER BY rows DESC NULLS LAST, rank, check_name
