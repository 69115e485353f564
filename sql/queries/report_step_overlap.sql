-- Report, utilisation page: each step of each rank (the first $max_steps) split into computation, communication
-- hidden by computation, communication left over and free (idle) time, ms (step_overlap), with msprof-analyze's
-- other step_trace_time.csv columns (communication, stage, bubble, not overlapped less Receive, preparing) and the
-- memory copies and sets of GPU steps (step_gpu_time; NULL elsewhere).
SELECT o.rank, o.capture, o.step, o.total_ns / 1e6 AS total_ms, o.computation_ns / 1e6 AS computation_ms,
       o.overlapped_communication_ns / 1e6 AS overlapped_communication_ms,
       o.pure_communication_ns / 1e6 AS pure_communication_ms, o.free_ns / 1e6 AS free_ms,
       o.communication_ns / 1e6 AS communication_ms, (o.total_ns - o.bubble_ns) / 1e6 AS stage_ms,
       o.bubble_ns / 1e6 AS bubble_ms, (o.pure_communication_ns - o.bubble_ns) / 1e6 AS exclude_receive_ms,
       o.preparing_ns / 1e6 AS preparing_ms, (g.memcpy_ns + g.memset_ns) / 1e6 AS memory_ms
FROM step_overlap o LEFT JOIN step_gpu_time g USING (rank, capture, step)
QUALIFY row_number() OVER (PARTITION BY o.rank, o.capture ORDER BY o.step) <= $max_steps
ORDER BY o.rank, o.capture, o.step
