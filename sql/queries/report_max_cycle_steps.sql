-- Report, step trace page (profpipe/report/pages.py): the most steps one profiling cycle (rank, capture) holds
-- (step_phases); NULL without steps. The page says when its chart keeps fewer.
SELECT max(n) AS steps
FROM (SELECT count(*) AS n FROM step_phases GROUP BY rank, capture)
