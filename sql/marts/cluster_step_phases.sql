WITH phases AS (
    SELECT p.rank, p.capture, p.step, p.total_ns, p.iteration_interval_ns, p.fp_and_bp_ns, p.tail_ns,
           o.pure_communication_ns, o.receive_alone_ns, o.collective_alone_ns, o.stage_ns,
           (p.rank // (try_cast(json_extract(r.metadata_json, '$.rank_size') AS BIGINT)
                       // nullif(try_cast(json_extract(r.metadata_json, '$.stage_num') AS BIGINT), 0)) + 1) AS stage
    FROM {{ ref('step_phases') }} p
    LEFT JOIN {{ ref('step_overlap') }} o USING (rank, capture, step)
    LEFT JOIN (SELECT rank, capture, arg_max(metadata_json, (json_extract(metadata_json, '$.rank_size') IS NOT NULL, layout)) AS metadata_json
               FROM {{ ref('stg_run_info') }} GROUP BY rank, capture) r USING (rank, capture)
), per_step AS (
    SELECT capture, step, count(*) AS ranks, min(total_ns) AS fastest_total_ns, max(total_ns) AS slowest_total_ns,
           arg_max(rank, (total_ns, -rank)) AS slowest_rank
    FROM phases GROUP BY capture, step
)
SELECT
    p.rank, p.capture, p.step, p.total_ns, p.iteration_interval_ns, p.fp_and_bp_ns, p.tail_ns, p.pure_communication_ns,
    p.receive_alone_ns, p.collective_alone_ns, p.stage_ns, p.stage,
    s.ranks, s.fastest_total_ns, s.slowest_total_ns, s.slowest_rank,
    (s.slowest_total_ns - s.fastest_total_ns) / nullif(s.fastest_total_ns, 0) AS spread,
    p.total_ns / nullif(s.fastest_total_ns, 0) - 1 AS slowdown,
    -- more than 5 % slower, compared in integers: 105 / 100 - 1 > 0.05 holds in floating point
    coalesce(s.fastest_total_ns > 0 AND p.total_ns * 100 > s.fastest_total_ns * 105, false) AS is_slow
FROM phases p JOIN per_step s USING (capture, step)
