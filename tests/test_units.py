"""The one µs/ms -> ns rule (profpipe/ingest/units.py): its polars, DuckDB and Python forms agree with each
other and with exact decimal arithmetic on any text a profiler may write, damaged or not."""
from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

import duckdb
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from profpipe.ingest.lines import MAX_NS
from profpipe.ingest.scratch import memory_database
from profpipe.ingest.units import MAX_US, ms_to_ns, us_text_to_ns, us_to_ns


def _exact_ns(text: str, ns_per_unit: int = 1000) -> int | None:
    """The oracle: Python's decimal arithmetic on texts with at most 9 fraction digits."""
    text = text.strip(" \t\r\n")
    if not text or text[0] not in "+-.0123456789" or "_" in text or "x" in text.lower():
        return None  # hex, digit groups, nan, inf: no time
    try:
        value = Decimal(text)
    except ArithmeticError:
        return None
    if abs(value * ns_per_unit) > MAX_NS:
        return None
    return int((value * ns_per_unit).to_integral_value(rounding=ROUND_HALF_EVEN))


def _all_forms(texts: list[str]) -> tuple[list, list, list]:
    frame = pl.DataFrame({"us": texts}, schema={"us": pl.String})
    polars_ns = frame.select(us_to_ns(pl.col("us"))).to_series().to_list()
    with memory_database() as con:  # the macro is created in every scratch database
        duckdb_ns = [row[0] for row in con.execute(
            "SELECT us_to_ns(us) FROM (SELECT unnest(?::VARCHAR[]) AS us, generate_subscripts(?::VARCHAR[], 1) AS i) "
            "ORDER BY i", [texts, texts]).fetchall()]
    return polars_ns, duckdb_ns, [us_text_to_ns(t) for t in texts]


#: Times as profilers write them: whole µs, fractions to 9 digits, exponents, signs and padding.
_DECIMALS = st.builds(lambda whole, frac, digits: f"{whole}.{frac:0{digits}d}"[: len(str(whole)) + 1 + digits],
                      st.integers(-(10**17), 10**17), st.integers(0, 10**9 - 1), st.integers(1, 9))
_TEXTS = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(str),
    _DECIMALS,
    st.builds(lambda m, e: f"{m}e{e}", st.integers(-(10**6), 10**6), st.integers(-9, 15)),
    st.sampled_from(["nan", "inf", "-inf", "", " ", "1.2.3", "abc", "1e400", "0x10", " 7 ", "-0", "+5"]),
    _DECIMALS.map(lambda t: f"  {t}\t"),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TEXTS, min_size=1, max_size=20))
def test_the_three_forms_of_the_rule_agree_with_exact_arithmetic(texts):
    polars_ns, duckdb_ns, python_ns = _all_forms(texts)
    expected = [_exact_ns(t) for t in texts]
    assert python_ns == expected
    assert polars_ns == expected
    assert duckdb_ns == expected


def test_ties_go_to_the_even_ns_and_range_ends_are_exact():
    texts = ["1.0005", "1.0015", "-1.0005", "0.0025", str(MAX_US), str(MAX_US + 1), f"-{MAX_US}",
             "1700000000000000.1235", "1700000000000000", str(-2**63)]
    expected = [1000, 1002, -1000, 2, MAX_US * 1000, None, -MAX_US * 1000, 1700000000000000124, 1700000000000000000, None]
    assert all(form == expected for form in _all_forms(texts))


def test_an_epoch_time_keeps_its_last_digit():
    """An epoch time in µs with its ns: a double keeps about 16 digits and would change the last ones."""
    assert float("1700000000123456.789") * 1000 != 1700000000123456789
    assert _all_forms(["1700000000123456.789"]) == ([1700000000123456789],) * 3
    assert _all_forms(["1700000000123.4565"]) == ([1700000000123456],) * 3


def test_milliseconds_take_the_same_rule():
    frame = pl.DataFrame({"ms": ["0.0000015", "12.3", "1e-3", "nan", str(MAX_NS // 10**6 + 1)]})
    assert frame.select(ms_to_ns(pl.col("ms"))).to_series().to_list() == [2, 12_300_000, 1_000, None, None]


def test_the_macro_is_only_in_profpipe_databases():
    with duckdb.connect() as con:
        assert not con.execute("SELECT count(*) FROM duckdb_functions() WHERE function_name = 'us_to_ns'").fetchone()[0]
