-- reports/summary.json (profpipe/export/summary.py): rank $rank's input-pipeline findings (data_findings):
-- profpipe's first, then MindSpore's, then MindInsight's, each by rule and op.
SELECT analyzer, rule, op, finding, suggestion
FROM data_findings
WHERE rank = $rank
ORDER BY CASE analyzer WHEN 'profpipe' THEN 0 WHEN 'mindspore' THEN 1 ELSE 2 END, rule, op_id
