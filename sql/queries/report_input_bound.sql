-- Report, data pipeline page (profpipe/report/pages.py): one row: the steps whose wait for input was measured
-- (step_input_wait), how many of them are highly and moderately input-bound, and where the wait was measured.
SELECT count(*) AS steps, count(*) FILTER (WHERE input_bound = 'highly') AS highly,
       count(*) FILTER (WHERE input_bound = 'moderately') AS moderately, any_value(wait_source) AS wait_source
FROM step_input_wait
