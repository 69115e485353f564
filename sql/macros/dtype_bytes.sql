-- dtype_bytes(input_type): bytes per element of a tensor of Kineto's Input type (c10's type names, spelt exactly
-- as Kineto writes them, as TraceLens' name2bpe maps them): double, long int, c10::complex<float> 8; float, int 4;
-- c10::Half, c10::BFloat16, short int 2; signed char, unsigned char, bool, the c10::Float8_* types 1;
-- c10::complex<double> 16. NULL for what is no tensor ('' for None, Scalar, ScalarList, ...) and for a type not
-- listed, a spelling that differs in case included ('Float', 'Double': old Kineto's scalar markers are 'Double',
-- 'Int', 'Bool'), so that a cost is then not estimated, never guessed.
CREATE MACRO dtype_bytes(input_type) AS
    CASE input_type
        WHEN 'double' THEN 8 WHEN 'long int' THEN 8 WHEN 'c10::complex<float>' THEN 8
        WHEN 'c10::complex<double>' THEN 16
        WHEN 'float' THEN 4 WHEN 'int' THEN 4
        WHEN 'c10::Half' THEN 2 WHEN 'c10::BFloat16' THEN 2 WHEN 'short int' THEN 2
        WHEN 'signed char' THEN 1 WHEN 'unsigned char' THEN 1 WHEN 'bool' THEN 1
        WHEN 'c10::Float8_e4m3fn' THEN 1 WHEN 'c10::Float8_e5m2' THEN 1 WHEN 'c10::Float8_e4m3fnuz' THEN 1
        WHEN 'c10::Float8_e5m2fnuz' THEN 1
    END
