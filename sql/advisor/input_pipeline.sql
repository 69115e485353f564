-- The MindData verdicts of data_findings that name a problem: profpipe's slowest stage (its input queue fuller
-- than its output queue by more than 50 points) and MindInsight's device-queue status when the host queue was
-- empty for more than 30 % of the batches.
SELECT rank, capture, NULL::BIGINT AS step, value, analyzer, rule, op, threshold AS rule_threshold, finding,
       suggestion AS rule_suggestion
FROM {{ ref('data_findings') }}
WHERE (analyzer = 'profpipe' AND rule = 'slowest_op')
   OR (analyzer = 'mindinsight' AND rule = 'device_queue' AND value > threshold)
