"""Stage 2, ingest helper: the one rule that turns a source's microseconds (or milliseconds) into the
tables' integer nanoseconds.

Profilers write times in µs (ms in MindSpore's CPU op files) as text: whole numbers, decimals down to
ns or below (Kineto, msprof, MindSpore's CUPTI files) or with an exponent. Every reader converts them by
one rule, whichever engine it parses with:

* the text is read as an exact decimal, never through a binary float (a double keeps about 16 digits,
  and an epoch time in µs with a fraction has 19 or more); digits below 10^-9 of the unit are rounded
  off as the text is read (no profiler writes them; the engines may round that tenth digit differently,
  which moves a result only for a time within 10^-9 of a half ns);
* times 1000 (µs) or 1,000,000 (ms), rounded to the nearest whole ns, ties to the even ns;
* a value that is not a finite number, or whose ns would pass MAX_NS (beyond MAX_US µs), gives null
  (None): the reader drops that record and reports it in the trace-health ledger.

The rule is written once per engine, and tests/test_units.py checks that the three agree with each other
and with Python's `decimal` arithmetic on any text:

* `us_to_ns(expr)` (`ms_to_ns(expr)`): a polars expression over a text column;
* `US_TO_NS_MACRO`: the DuckDB macro `us_to_ns(text)`, created in every scratch database (scratch.py);
* `us_text_to_ns(text)` (`ms_text_to_ns(text)`): one Python value.
"""
from __future__ import annotations

import re
from decimal import ROUND_HALF_EVEN, Decimal
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # polars is imported where it is used: the Kineto and Nsight readers start without it
    import polars as pl

#: The largest time or duration in ns a reader keeps (about 146 years): a larger one is damage, and the
#: sum of two such values still fits in int64 (polars and DuckDB integer arithmetic must not wrap).
MAX_NS = 2**62
#: The largest µs magnitude whose ns stays within MAX_NS.
MAX_US = MAX_NS // 1000
#: Blanks around a number, stripped first (spaces, tabs, line ends).
BLANKS = " \t\r\n"
#: What a number looks like (after BLANKS are stripped): decimal digits with an optional sign, point and
#: exponent. Anything else (hex such as 0x10, digit groups such as 1_000, nan, inf) is no time, though an
#: engine's own cast might read it.
NUMBER_PATTERN = r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?"

#: DuckDB: us_to_ns(text) -> BIGINT. Texts that are exactly how DuckDB writes a BIGINT or a DECIMAL(18, 3) (whole
#: µs, and Kineto's µs with ns fractions: the common cases) convert without a regular expression (five times
#: faster), tested by writing the value back. Any other text is checked against NUMBER_PATTERN; whole µs take
#: integer arithmetic, the rest an exact DECIMAL(38, 9), rounded half to even.
US_TO_NS_MACRO = f"""
CREATE OR REPLACE MACRO us_to_ns(us) AS (
    CASE WHEN try_cast(us AS BIGINT)::VARCHAR = us
         THEN CASE WHEN try_cast(us AS BIGINT) BETWEEN -{MAX_US} AND {MAX_US} THEN try_cast(us AS BIGINT) * 1000 END
         -- d.ddd: its digits are the ns; a DECIMAL(18, 3) is under 10^15 µs, within MAX_US (4.6 10^15): no range check
         WHEN try_cast(us AS DECIMAL(18, 3))::VARCHAR = us THEN replace(us, '.', '')::BIGINT
         WHEN NOT regexp_full_match(trim(us, $blanks), '{NUMBER_PATTERN}') THEN NULL
         WHEN contains(us, '.') OR contains(us, 'e') OR contains(us, 'E')
         THEN CASE WHEN try_cast(trim(us, $blanks) AS DECIMAL(38, 9)) BETWEEN -{MAX_US} AND {MAX_US}
                   THEN round_even(try_cast(trim(us, $blanks) AS DECIMAL(38, 9)) * 1000, 0)::BIGINT END
         ELSE CASE WHEN try_cast(trim(us, $blanks) AS BIGINT) BETWEEN -{MAX_US} AND {MAX_US}
                   THEN try_cast(trim(us, $blanks) AS BIGINT) * 1000 END
    END)
""".replace("$blanks", "' ' || chr(9) || chr(13) || chr(10)")


def us_to_ns(expr: pl.Expr) -> pl.Expr:
    """Polars: a text column of µs as Int64 ns by the module's rule (null where it gives no time)."""
    return _decimal_text_to_ns(expr, 1_000)


def ms_to_ns(expr: pl.Expr) -> pl.Expr:
    """Polars: a text column of ms as Int64 ns by the module's rule (null where it gives no time)."""
    return _decimal_text_to_ns(expr, 1_000_000)


def scaled_decimal(expr: pl.Expr, scale: int) -> pl.Expr:
    """Polars: a text column of decimal numbers times the whole number `scale`, as Int64 by the module's rule
    (exact decimal, rounded half to even; null where not a number or beyond MAX_NS): µs -> ns with 1000, the
    memory files' KB -> bytes with 1024."""
    return _decimal_text_to_ns(expr, scale)


def _decimal_text_to_ns(expr: pl.Expr, ns_per_unit: int) -> pl.Expr:
    import polars as pl
    text = expr.str.strip_chars(BLANKS)
    value = pl.when(text.str.contains(f"^{NUMBER_PATTERN}$")).then(text).cast(pl.Decimal(38, 9), strict=False)
    return pl.when(value.abs() <= MAX_NS // ns_per_unit).then((value * ns_per_unit).round(0)).cast(pl.Int64, strict=False)


def us_text_to_ns(text: str) -> int | None:
    """Python: one µs text as int ns by the module's rule; None where it gives no time (not a finite number,
    or out of range)."""
    return _text_to_ns(text, 1_000)


def ms_text_to_ns(text: str) -> int | None:
    """Python: one ms text as int ns by the module's rule; None where it gives no time."""
    return _text_to_ns(text, 1_000_000)


def _text_to_ns(text: str, ns_per_unit: int) -> int | None:
    if not re.fullmatch(NUMBER_PATTERN, text.strip(BLANKS)):
        return None
    number = Decimal(text.strip(BLANKS))
    if abs(number) > MAX_NS // ns_per_unit:
        return None
    return int((number * ns_per_unit).to_integral_value(rounding=ROUND_HALF_EVEN))
