-- Steps and communication spans in device ticks (MindSpore's unit: ns / (1e9 / tick_hz), rounded half to even).
-- Only steps with an FP point (MindSpore writes no others); a training run (some step has a BP point) keeps only
-- its steps with one.
WITH steps AS (
    SELECT s.rank, s.capture, s.step, r.device_id, 1e9 / r.tick_hz AS tick, s.start_ns, s.end_ns, s.fp_ns, s.bp_ns,
           count(s.bp_ns) OVER (PARTITION BY s.rank, s.capture) > 0 AS training
    FROM {{ ref('step_phases') }} s
    JOIN {{ ref('ascend_rank') }} r USING (rank)
    WHERE s.fp_ns IS NOT NULL
), kept AS (
    SELECT *, min(step) OVER (PARTITION BY rank, capture) AS first_step,
           round_even(start_ns / tick, 0)::BIGINT AS s, round_even(end_ns / tick, 0)::BIGINT AS e,
           round_even(fp_ns / tick, 0)::BIGINT AS f, round_even(bp_ns / tick, 0)::BIGINT AS b
    FROM steps
    WHERE bp_ns IS NOT NULL OR NOT training
), columns AS (  -- the communication spans of the first step name the columns
    SELECT c.rank, c.capture, c.stream_id, c.pair, c.op_label
    FROM {{ ref('step_communication') }} c
    JOIN (SELECT DISTINCT rank, capture, first_step FROM kept) k
      ON k.rank = c.rank AND k.capture = c.capture AND k.first_step = c.step
), cells AS (  -- every step has each column; 0 where it lacks that span
    SELECT k.rank, k.capture, k.step,
           list({'stream_id': p.stream_id, 'pair': p.pair, 'op_label': p.op_label,
                 'start': coalesce(round_even(c.start_ns / k.tick, 0)::BIGINT, 0),
                 'end': coalesce(round_even(c.end_ns / k.tick, 0)::BIGINT, 0)} ORDER BY p.stream_id, p.pair) AS spans
    FROM kept k
    JOIN columns p ON p.rank = k.rank AND p.capture = k.capture
    LEFT JOIN {{ ref('step_communication') }} c
           ON c.rank = k.rank AND c.capture = k.capture AND c.step = k.step AND c.stream_id = p.stream_id
          AND c.pair = p.pair
    GROUP BY k.rank, k.capture, k.step
)
SELECT k.rank, k.capture, k.device_id, k.step AS step_num, k.step = k.first_step AS first_step, k.training,
       CASE WHEN k.training THEN [s, e, e - s, f, b, f - s, b - f, e - b] ELSE [s, e, e - s, f, f - s, e - f] END
           AS phases,
       c.spans
FROM kept k
LEFT JOIN cells c USING (rank, capture, step)
