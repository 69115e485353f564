-- op_type_of(op_name): the op type a scoped op name carries: its short name up to the last '-'
-- ('Default/network/conv1/Conv2D-op0' -> 'Conv2D'), the whole short name when it has no '-'.
-- The one rule every model uses where the framework gives no op type.
CREATE MACRO op_type_of(op_name) AS
    CASE WHEN contains(op_short_name(op_name), '-')
         THEN regexp_extract(op_short_name(op_name), '^(.*)-[^-]*$', 1)
         ELSE op_short_name(op_name) END
