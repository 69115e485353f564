-- Report, operators page: the roof chart's points, GPU and Ascend ops on one plane, the most device time first
-- ($top). GPU (op_roofline, ops with a compute and a memory peak): compute_share = achieved FLOP/s over the data
-- sheet's peak for the op's type, memory_share = achieved bytes/s over its bandwidth; the larger is roof_ratio
-- (achieved over attainable at its intensity), and compute_share >= memory_share exactly when the intensity reaches
-- the ridge point, so the side of the diagonal is op_roofline's bound. Ascend (op_bound, PipeUtilization): the
-- busiest compute pipe (mac, vec, scalar) and the busiest data mover (mte1-3), busy shares of the task's time;
-- roof_bound and 1 - busiest_share as op_bound gives them.
SELECT * FROM (
    SELECT 'gpu' AS device, rank, op_name, op_class AS kind, input_dims || ' ' || dtype AS detail,
           device_ns / 1e6 AS device_ms,
           achieved_flop_per_second / peak_flop_per_second AS compute_share,
           achieved_bytes_per_second / peak_bytes_per_second AS memory_share,
           bound, 1 - roof_ratio AS roof_distance
    FROM op_roofline
    WHERE flop > 0 AND bytes > 0 AND peak_flop_per_second > 0 AND peak_bytes_per_second > 0
    UNION ALL
    SELECT 'ascend', rank, op_name, busiest_pipe, op_type, executions * avg_dur_ns / 1e6,
           compute_share, memory_share, roof_bound, roof_distance
    FROM op_bound
)
ORDER BY device_ms DESC, device, rank, op_name, detail
LIMIT $top
