SELECT rank, capture, step, op_label, op_name, iteration, seq, plane, main_plane, stream_id, task_id, task_type,
       src_rank, dst_rank, link, transport, bytes, start_ns, dur_ns
FROM {{ ref('int_comm_task') }}
