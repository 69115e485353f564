-- op_short_name(op_name): the last element of a scoped op name, the text after its last '/'
-- ('Default/network/conv1/Conv2D-op0' -> 'Conv2D-op0'); the whole name when it has no '/'.
CREATE MACRO op_short_name(op_name) AS regexp_extract(op_name, '[^/]*$')
