-- MindSpore 2.2's running mean, in µs: avg += (dur - avg) / count over the group's spans in end order
SELECT s.rank, s.event AS "Operation", s.stage AS "Stage", s.occurrences AS "Occurrences",
       list_reduce(list({'avg': h.dur_ns // 1000, 'n': 1} ORDER BY h.end_line)
                   .list_transform(lambda x, i: {'avg': x.avg::DOUBLE, 'n': i::DOUBLE}),
                   lambda acc, x: {'avg': acc.avg + (x.avg - acc.avg) / x.n, 'n': x.n}).avg AS "Avg. time (us)",
       s.custom_info AS "Custom Info", s.first_end_line
FROM {{ ref('dataset_host_stats') }} s
JOIN {{ ref('host_span') }} h
  ON h.rank = s.rank AND h.capture = s.capture AND h.module = 'Dataset' AND h.kind = 'span'
 AND h.event = s.event AND h.stage = s.stage AND h.custom_info = s.custom_info
WHERE s.capture = 0
GROUP BY s.rank, s.event, s.stage, s.occurrences, s.custom_info, s.first_end_line
