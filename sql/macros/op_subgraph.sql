-- op_subgraph(op_name): the first element of a scoped op name's path (Default, Gradients,
-- recompute_Default, ...), which MindSpore calls the op's subgraph.
CREATE MACRO op_subgraph(op_name) AS split_part(op_name, '/', 1)
