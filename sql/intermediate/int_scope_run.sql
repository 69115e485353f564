-- Which of MindSpore's scope timelines a MindSpore capture gets, from the layouts it was read from: a capture with
-- a 2.3+ layout (era E msprof export, era F *_ascend_ms, 2.5+ FRAMEWORK folder) gets the Scope Layer merge, one
-- with only older layouts (flat profiler folder of CPU / GPU runs, raw Ascend eras A-C, era D export) the
-- "Scope Name" thread of 1.3-2.2 (and of GPU and CPU runs up to 2.4)
SELECT rank, capture,
       CASE WHEN bool_or(layout IN ('framework', 'ascend_era_f', 'ascend_era_e')) THEN 'scope_layer'
            ELSE 'scope_name' END AS algorithm,
       bool_or(device_type = 'ascend') AS ascend
FROM {{ ref('stg_run_info') }}
WHERE framework = 'mindspore'
  AND layout IN ('framework', 'ascend_era_f', 'ascend_era_e', 'flat', 'ascend_era_a', 'ascend_era_b', 'ascend_era_c',
                 'ascend_era_d')
GROUP BY rank, capture
