-- The launch queue of each GPU stream over time, as HTA counts it (int_gpu_queue_length).
SELECT rank, capture, stream_id, ts_ns, queue_length, held_ns FROM {{ ref('int_gpu_queue_length') }}
