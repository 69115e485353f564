-- the rows of the host info file with a memory sample, in MindSpore's units and text (kB, µs, 0 where none)
SELECT c.rank, c.tid::VARCHAR AS tid, c.pid::VARCHAR AS pid, c.parent_pid::VARCHAR AS parent_pid,
       c.module AS module_name, c.event, c.stage, c.level::VARCHAR AS level,
       CASE c.kind WHEN 'start' THEN '0' WHEN 'end' THEN '1' ELSE '2' END AS start_end, c.custom_info,
       (c.memory_bytes // 1024)::VARCHAR AS "memory_usage(kB)", coalesce(c.ts_ns // 1000, 0)::VARCHAR AS "time_stamp(us)",
       c.sample
FROM {{ ref('host_memory_curve') }} c
WHERE c.capture = 0
