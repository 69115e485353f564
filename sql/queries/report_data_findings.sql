-- Report, data pipeline page (profpipe/report/pages.py): the input pipeline's bottleneck verdicts (data_findings)
-- of every rank: per rank profpipe's first, then MindSpore's, then MindInsight's, each by rule.
SELECT rank, analyzer, rule, op, finding, suggestion
FROM data_findings
ORDER BY rank, analyzer DESC, rule
