SELECT rank, seq, op_name, op_type, stream_id, task_id, run_start_ns, run_end_ns, total_ns, dispatch_ns
FROM {{ ref('stg_aicpu_exec') }}
