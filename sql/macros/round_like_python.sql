-- round_like_python(x, digits): x rounded as Python's round(x, digits) does: half to even on the exact
-- binary value, so reports that copy MindSpore's Python (which rounds 1.385 up: its double is
-- 1.38500000000000000888) print the same digits; for |x| < 1e17.
CREATE MACRO round_like_python(x, digits) AS round_even(printf('%.20f', x)::DECIMAL(38, 20), digits)::DOUBLE
