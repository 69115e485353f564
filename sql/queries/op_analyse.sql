-- profpipe.op_analyse (profpipe/api.py): MindSpore's answer for one name $name on rank $rank: the op instances whose
-- op type, op name (short name, MatMul-op0) or full scoped name equals it, summed per op side and input shape, in µs
-- rounded to 4 decimals, ordered as MindSpore's entries are listed here.
SELECT op_side, input_shape, sum(op_occurrences)::BIGINT AS op_occurrences,
       round(sum(total_ns) / 1e3, 4) AS "op_total_time(us)",
       round(sum(total_ns) / 1e3 / sum(op_occurrences), 4) AS "op_avg_time(us)"
FROM op_analyse
WHERE rank = $rank AND $name IN (op_type, short_name, op_name)
GROUP BY op_side, input_shape
ORDER BY op_side, input_shape
