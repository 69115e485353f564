-- The time (ns since its group's base) of the first timed timeline event that no longer fits the byte
-- budget ? (NULL: all fit), over the exporter's temp view timeline_events (timeline_events.sql): metadata
-- and steps (tier 0) are always kept and paid for first, then events in time order.
WITH sized AS (SELECT tier, rel_ns, strlen(event) + 2 AS bytes FROM timeline_events),
fixed AS (SELECT coalesce(sum(bytes), 0) AS bytes FROM sized WHERE tier = 0),
running AS (SELECT rel_ns, sum(bytes) OVER (ORDER BY rel_ns ROWS UNBOUNDED PRECEDING) AS bytes
            FROM sized WHERE tier = 1)
SELECT min(running.rel_ns) FROM running, fixed WHERE running.bytes + fixed.bytes > ?
