-- The GPU activities HolisticTraceAnalysis analyses, after its loading rules (gpu-analyses.md section 1.0), so
-- that the hta rows of gpu_time_breakdown and gpu_idle_breakdown reproduce its numbers:
-- * times integerised to µs as HTA does for traces with ns fractions, in its arithmetic: the trace's own ts and
--   dur (µs, relative to baseTimeNanoseconds where the trace has one) as the doubles a JSON parser reads, the
--   start rounded up, start + duration summed as doubles and rounded down (an activity shorter than 1 µs may
--   come out 0 or -1 µs long; an epoch µs with an ns fraction has more digits than a double holds, and HTA
--   rounds the double); whole-µs traces are unchanged;
-- * with at least two ProfilerStep#N steps on the rank, only activities whose runtime call (same correlation id)
--   started before HTA's cut-off, the latest start of a ProfilerStep#N span of any category (the host's, or its
--   copy on a GPU stream: the last step is left out), and that have such a call.
WITH steps AS (  -- HTA's cut-off: the latest start of any ProfilerStep#N span, the host's or a GPU stream's copy
    SELECT rank, capture, count(DISTINCT step) AS steps, max(ts_ns) AS last_start_ns
    FROM {{ ref('stg_step_point') }} WHERE kind IN ('step_start', 'device_step_start') GROUP BY rank, capture
), bases AS (  -- the origin of the trace's own times
    SELECT rank, capture,
           coalesce(try_cast(json_extract_string(metadata_json, '$.baseTimeNanoseconds') AS BIGINT), 0) AS base_ns
    FROM {{ ref('stg_run_info') }}
), activities AS (
    SELECT rank, capture, stream_id, kind, name, correlation, start_ns, dur_ns, bytes, call_start_ns AS runtime_start_ns
    FROM {{ ref('int_launched_activity') }}
), as_read AS (  -- the trace's ts and dur as doubles, as HTA's parser has them
    SELECT a.*, b.base_ns,
           ((a.start_ns - b.base_ns)::DECIMAL(38, 3) * 0.001::DECIMAL(4, 3))::VARCHAR::DOUBLE AS ts_us,
           (a.dur_ns::DECIMAL(38, 3) * 0.001::DECIMAL(4, 3))::VARCHAR::DOUBLE AS dur_us,
           ((a.runtime_start_ns - b.base_ns)::DECIMAL(38, 3) * 0.001::DECIMAL(4, 3))::VARCHAR::DOUBLE AS runtime_ts_us
    FROM activities a LEFT JOIN bases b USING (rank, capture)
)
SELECT r.rank, r.capture, r.stream_id, r.kind, r.name, r.correlation,
       ceil(r.ts_us)::BIGINT * 1000 + r.base_ns AS start_ns,
       floor(r.ts_us + r.dur_us)::BIGINT * 1000 + r.base_ns AS end_ns,
       ceil(r.runtime_ts_us)::BIGINT * 1000 + r.base_ns AS runtime_start_ns,
       hta_kernel_type(r.name) AS hta_type,
       r.dur_ns AS exact_dur_ns,
       r.bytes
FROM as_read r
LEFT JOIN steps s USING (rank, capture)
WHERE coalesce(s.steps, 0) < 2 OR r.runtime_start_ns < s.last_start_ns
