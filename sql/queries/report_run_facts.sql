-- Report, overview page (profpipe/report/pages.py): one row of facts about the run: its ranks, profiling cycles
-- (rank × capture), formats (layouts), frameworks and device types (rank_info), devices, steps and rank-steps
-- (step_phases).
SELECT count(DISTINCT rank) AS ranks, count(DISTINCT (rank, capture)) AS captures,
       string_agg(DISTINCT layout, ', ') AS formats, string_agg(DISTINCT framework, ', ') AS frameworks,
       string_agg(DISTINCT device_type, ', ') AS device_types,
       (SELECT count(DISTINCT (rank, device_id)) FROM rank_info WHERE device_id IS NOT NULL) AS devices,
       (SELECT count(DISTINCT step) FROM step_phases) AS steps, (SELECT count(*) FROM step_phases) AS rank_steps
FROM rank_info
