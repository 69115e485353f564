-- op_roofline_cost(op_name, input_dims, input_types, concrete_inputs): an op execution's estimated work from its
-- inputs as Kineto writes them (host_op.input_dims, input_types, concrete_inputs; JSON text), as a struct:
-- op_class (gemm, conv, attention, norm, elementwise), flop, bytes (DRAM traffic if every tensor is read once and
-- the output written once, no cache reuse counted), dtype (the first input's type). The formulas are TraceLens'
-- perf models (TraceLens/PerfModel/perf_model.py: GEMM, CONV, SDPA, Normalization, Unary/BinaryElementwise), with
-- each tensor at its own dtype_bytes:
--   bytes = every tensor input's elements x its bytes + the output's elements x the first input's bytes
--   gemm (aten::mm, addmm, bmm, baddbmm, matmul, linear): A [..., M, K], B [..., K, N] (linear: weight [N, K];
--     addmm / baddbmm: inputs 2 and 3, the bias read as its own dims): output (elements of A / K) x N = M N per
--     batch, so bytes = (M K + K N + M N) x elem (+ bias); flop = 2 M N K per batch (PyTorch's and TraceLens'
--     count; TraceLens adds M N for a bias, left out as PyTorch does)
--   conv (aten::conv2d): input [N, C, H, W] + weight [Co, C/g, kh, kw] (+ bias) + output [N, Co, Ho, Wo],
--     Ho = (H + 2 padding - dilation (kh - 1) - 1) / stride + 1 (Concrete Inputs stride, padding, dilation);
--     flop = 2 x output elements x C/g kh kw (PyTorch's conv2d count); padding 'same' / 'valid' gives none
--   attention (aten::scaled_dot_product_attention): Q [B, H, Nq, d], K, V [B, Hkv, Nkv, d(v)] (+ a mask tensor)
--     + O [B, H, Nq, dv]; flop = 2 B H Nq Nkv (d + dv) (QK^T and PV; softmax left out as TraceLens does), halved
--     when is_causal and Nq = Nkv (none when causal with Nq <> Nkv)
--   norm (aten::layer_norm, group_norm, batch_norm, rms_norm): input + weight, bias, running stats + output of
--     the input's size (TraceLens' Normalization reads and writes the activation once); flop per element 5
--     (statistics 3, scale and shift 2: TraceLens' count without its per-channel terms), batch_norm with
--     training False 2, rms_norm 4 (square, sum, scale by rstd and weight)
--   elementwise (aten::add(_), mul(_), sub(_), div(_), relu(_), gelu, silu, sigmoid, tanh, threshold_backward,
--     gelu_backward, silu_backward): the operands (the first input of relu, gelu, silu, sigmoid, tanh; the first two
--     of the others: a later tensor, such as mul.out's out, is written, not read) + an output of the largest
--     operand's elements (broadcast: exact where one operand has the output's shape); flop = the output's elements
--     (TraceLens)
-- NULL flop and bytes where the dims are missing, not whole numbers or negative, not one list per input type, given
-- for a non-tensor input, or a tensor's element count (or the cost) passes BIGINT; where an input's type is neither
-- a tensor type dtype_bytes knows nor a non-tensor ('' None, Scalar, ScalarList, ..., old Kineto's Int, Bool,
-- Double); where a Concrete Input the formula reads is not a whole number (conv2d's stride and dilation at least 1,
-- its output at least 1 x 1) or a flag it reads (attention's is_causal, batch_norm's training: flop only) is not
-- exactly True or False (a trace without Concrete Inputs, PyTorch 1.x, gives batch_norm and attention no flop); or
-- where the op is not listed. A damaged field gives no cost, never a changed one (tests/test_fuzz_roofline_fields.py).
CREATE MACRO op_roofline_cost(op_name, input_dims, input_types, concrete_inputs) AS (
    WITH parsed AS (
        SELECT CASE WHEN regexp_full_match(input_dims, '[\[\]0-9, -]*') THEN try_cast(input_dims AS BIGINT[][]) END AS d,
               try_cast(try_cast(input_types AS JSON) AS VARCHAR[]) AS t,
               list_transform(try_cast(try_cast(concrete_inputs AS JSON) AS VARCHAR[]),
                   lambda x: CASE WHEN regexp_full_match(x, '\[?[0-9]+(, *[0-9]+)*\]?') THEN
                       try_cast(CASE WHEN starts_with(x, '[') THEN x ELSE '[' || x || ']' END AS BIGINT[]) END) AS c,
               try_cast(try_cast(concrete_inputs AS JSON) AS VARCHAR[]) AS flags,
               CASE WHEN op_name IN ('aten::mm', 'aten::addmm', 'aten::bmm', 'aten::baddbmm', 'aten::matmul', 'aten::linear')
                        THEN 'gemm'
                    WHEN op_name = 'aten::conv2d' THEN 'conv'
                    WHEN op_name = 'aten::scaled_dot_product_attention' THEN 'attention'
                    WHEN op_name IN ('aten::layer_norm', 'aten::group_norm', 'aten::batch_norm', 'aten::rms_norm') THEN 'norm'
                    WHEN op_name IN ('aten::add', 'aten::add_', 'aten::mul', 'aten::mul_', 'aten::sub', 'aten::sub_',
                                     'aten::div', 'aten::div_', 'aten::relu', 'aten::relu_', 'aten::gelu', 'aten::silu',
                                     'aten::sigmoid', 'aten::tanh', 'aten::threshold_backward', 'aten::gelu_backward',
                                     'aten::silu_backward') THEN 'elementwise'
               END AS op_class
    ), inputs AS (
        SELECT *,
               -- elements of each input that is a tensor (a 0-d tensor has dims [] and 1 element), NULL otherwise
               list_transform(range(1, len(t) + 1), lambda i: CASE WHEN dtype_bytes(t[i]) IS NOT NULL
                   AND (op_class <> 'elementwise' OR i <= CASE WHEN op_name IN ('aten::relu', 'aten::relu_',
                        'aten::gelu', 'aten::silu', 'aten::sigmoid', 'aten::tanh') THEN 1 ELSE 2 END)
                   THEN CASE WHEN len(d[i]) = 0 THEN 1 ELSE try(list_reduce(d[i], lambda x, y: x * y)) END END) AS n,
               -- the dims are usable: one list per input, no negative dim, every tensor's element count within BIGINT
               -- and a non-tensor input ('' None, Scalar, ...) has no dims
               -- (each test counts the inputs that fail it, a NULL as a failure: list_bool_and would skip a NULL)
               len(d) = len(t) AND coalesce(list_min(flatten(d)), 0) >= 0
                   AND len(list_filter(range(1, len(t) + 1), lambda i: NOT coalesce(d[i] IS NOT NULL
                       AND (dtype_bytes(t[i]) IS NOT NULL OR len(d[i]) = 0)
                       AND (dtype_bytes(t[i]) IS NULL OR len(d[i]) = 0
                            OR try(list_reduce(d[i], lambda x, y: x * y)) IS NOT NULL), false))) = 0 AS dims_ok,
               len(list_filter(t, lambda x: NOT coalesce(dtype_bytes(x) IS NOT NULL
                   OR list_contains(['', 'Scalar', 'ScalarList', 'String', 'Device', 'Layout', 'ScalarType',
                                     'MemoryFormat', 'GenericList', 'None', 'Int', 'Bool', 'Double'], x), false)))
                   = 0 AS types_known,
               CASE WHEN op_name IN ('aten::addmm', 'aten::baddbmm') THEN 2 ELSE 1 END AS a,
               CASE WHEN op_name IN ('aten::addmm', 'aten::baddbmm') THEN 3 ELSE 2 END AS b
        FROM parsed
    ), conv_out AS (  -- conv2d's output height and width (stride, padding, dilation: Concrete Inputs 4, 5, 6)
        SELECT *, try(CASE WHEN op_class = 'conv'
                      THEN (d[1][3] + 2 * c[5][1] - c[6][1] * (d[2][3] - 1) - 1) // c[4][1] + 1 END) AS ho,
                  try(CASE WHEN op_class = 'conv'
                      THEN (d[1][4] + 2 * coalesce(c[5][2], c[5][1]) - coalesce(c[6][2], c[6][1]) * (d[2][4] - 1) - 1)
                           // coalesce(c[4][2], c[4][1]) + 1 END) AS wo
        FROM inputs
    ), work AS (
        SELECT *, try(CASE op_class
            WHEN 'gemm' THEN CASE WHEN op_name = 'aten::linear' AND len(d[2]) = 2 AND len(d[a]) >= 1
                                       THEN n[1] // d[1][-1] * d[2][1]
                                  WHEN op_name <> 'aten::linear' AND len(d[a]) >= 2 AND len(d[b]) >= 2
                                       THEN n[a] // d[a][-1] * d[b][-1] END
            WHEN 'conv' THEN CASE WHEN len(d[1]) = 4 AND len(d[2]) = 4 AND list_min(c[4]) >= 1 AND list_min(c[6]) >= 1
                THEN d[1][1] * d[2][1] * CASE WHEN least(ho, wo) >= 1 THEN ho * wo END END
            WHEN 'attention' THEN CASE WHEN len(d[1]) = 4 AND len(d[3]) = 4 THEN d[1][1] * d[1][2] * d[1][3] * d[3][4] END
            WHEN 'norm' THEN n[1]
            WHEN 'elementwise' THEN list_max(n)
            END) AS out
        FROM conv_out
    )
    SELECT {'op_class': op_class,
            'flop': CASE WHEN types_known AND dims_ok AND out IS NOT NULL THEN try(CASE op_class
                WHEN 'gemm' THEN 2 * out * CASE WHEN op_name = 'aten::linear' THEN d[1][-1] ELSE d[a][-1] END
                WHEN 'conv' THEN 2 * out * d[2][2] * d[2][3] * d[2][4]
                WHEN 'attention' THEN CASE WHEN flags[6] = 'False'
                                           THEN 2 * d[1][1] * d[1][2] * d[1][3] * d[2][3] * (d[1][4] + d[3][4])
                                           WHEN flags[6] = 'True' AND d[1][3] = d[2][3]
                                           THEN d[1][1] * d[1][2] * d[1][3] * d[2][3] * (d[1][4] + d[3][4]) END
                WHEN 'norm' THEN out * CASE WHEN op_name = 'aten::rms_norm' THEN 4
                                            WHEN op_name <> 'aten::batch_norm' THEN 5
                                            WHEN flags[6] = 'False' THEN 2 WHEN flags[6] = 'True' THEN 5 END
                WHEN 'elementwise' THEN out END::BIGINT) END,
            'bytes': CASE WHEN types_known AND dims_ok AND out IS NOT NULL THEN try((
                list_sum(list_transform(range(1, len(t) + 1), lambda i: coalesce(n[i] * dtype_bytes(t[i]), 0)))
                + out * dtype_bytes(t[1]))::BIGINT) END,
            'dtype': t[1]}
    FROM work)
