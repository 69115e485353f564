-- The summary's top ops of one rank ($rank) by $order (host_self_ns: their own host time; device_self_ns: the
-- device time they launched themselves), at most $limit. Annotations are spans around ops, not ops, and are left
-- out: record_function ranges and ProfilerStep#N (user_annotation), and those the readers label with the step
-- phase they mark (DataLoader and Optimizer.step ranges, Paddle's Forward spans), and MSTX markers (marker);
-- autograd engine events (category backward) are ops. Shares are of the ops' summed self time.
SELECT op_name, category, calls, host_self_ns / 1e6 AS self_ms, host_total_ns / 1e6 AS total_ms,
       device_self_ns / 1e6 AS device_self_ms,
       host_self_ns / nullif(sum(host_self_ns) OVER (), 0) AS self_share
FROM host_op_stats
WHERE rank = $rank AND coalesce(category, '') NOT IN ('user_annotation', 'dataloader', 'optimizer', 'forward', 'marker')
QUALIFY row_number() OVER (ORDER BY CASE $order WHEN 'device_self_ns' THEN device_self_ns ELSE host_self_ns END DESC,
                                    op_name) <= $limit
ORDER BY CASE $order WHEN 'device_self_ns' THEN device_self_ns ELSE host_self_ns END DESC, op_name
