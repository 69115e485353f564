-- step_trace_raw_<device>_detail_time.csv (profpipe/export/ascend_reports.py): per column of the file (i, from 1)
-- the exact sum (as text: a HUGEINT) and the count of the values of rank $rank's profiling cycle $capture that its
-- average row '-' averages; $legacy (--report-style legacy) leaves the cycle's first step out, as MindInsight 0.x.
-- The exporter rounds sum / count half to even, as MindSpore's Decimal average.
WITH steps AS (
    SELECT step_trace_values(phases, spans, $legacy) AS v
    FROM step_trace_raw
    WHERE rank = $rank AND capture = $capture AND NOT ($legacy AND first_step)
)
SELECT i, sum(x)::VARCHAR AS total, count(*) AS n
FROM (SELECT unnest(v) AS x, generate_subscripts(v, 1) AS i FROM steps)
GROUP BY i
ORDER BY i
