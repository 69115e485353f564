-- Steps in which communication runs with nothing computing beside it for more than the threshold of the step's
-- window on the device (step_overlap.pure_communication_ns / total_ns: a host step's GPU window), with the rank's
-- overall communication/computation overlap of HTA (comm_comp_overlap, profpipe's definition) where the trace has one.
SELECT o.rank, o.capture, o.step, o.pure_communication_ns / o.total_ns AS value, o.pure_communication_ns,
       o.communication_ns, o.total_ns, c.overlap_share AS capture_overlap_share
FROM {{ ref('step_overlap') }} o
LEFT JOIN {{ ref('comm_comp_overlap') }} c ON c.rank = o.rank AND c.capture = o.capture AND c.definition = 'profpipe'
WHERE o.total_ns > 0 AND o.pure_communication_ns / o.total_ns > {{ threshold }}
