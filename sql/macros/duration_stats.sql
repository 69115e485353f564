-- duration_stats(d): aggregate: Nsight Systems' summary of the durations d of a group (instances, total,
-- average, median, min, max, sample standard deviation; 0 for one instance), as a struct:
-- SELECT unnest(duration_stats(dur_ns)) FROM ... GROUP BY ...
CREATE MACRO duration_stats(d) AS {
    'instances': count(d), 'total_ns': sum(d)::BIGINT, 'avg_ns': avg(d), 'median_ns': median(d),
    'min_ns': min(d), 'max_ns': max(d), 'stddev_ns': coalesce(stddev_samp(d), 0)}
