"""Every analyse runs its models' data tests on the tables it wrote (profpipe/run.py `_check_output`,
profpipe/model_checks.py): a failure is a trace-health row (check model_test, action flagged) naming the model and a
breaking row, a warning on the console, and a partial run (exit 3); a run whose numbers pass has no such row.
`check_models` counts the breaking rows of each test as a test run alone would."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import duckdb
import pytest

import profpipe.run
from typer.testing import CliRunner

from conftest import FIXTURES, run
from profpipe.cli import app
from profpipe.errors import EXIT_COMPLETE, EXIT_PARTIAL
from profpipe.model_checks import check_models
from profpipe.models import Column, Invariant, load_models


def _with_broken_invariant(model_name: str, expression: str):
    """load_models, with `expression` added to `model_name`'s invariants."""
    def load():
        return [dataclasses.replace(m, invariants=(*m.invariants, Invariant(expression, "planted for the test")))
                if m.name == model_name else m for m in load_models()]
    return load


def test_a_broken_invariant_is_a_flagged_health_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profpipe.run, "load_models", _with_broken_invariant("op_type_stats", "occurrences < 2"))
    result = run(FIXTURES / "mindspore_cpu", tmp_path / "out")
    with duckdb.connect(str(tmp_path / "out" / "profile.duckdb"), read_only=True) as con:
        ops_once = con.execute("SELECT count(*) FROM op_type_stats WHERE NOT (occurrences < 2)").fetchone()[0]
        rows = con.execute("SELECT source, rank, action, rows, tables, message FROM trace_health "
                           "WHERE check_name = 'model_test'").fetchall()
    assert ops_once > 0
    assert rows == [("model op_type_stats", -1, "flagged", ops_once, "op_type_stats", rows[0][5])]
    assert "planted for the test" in rows[0][5] and "op_type_stats" in rows[0][5]
    assert result.exit_code == EXIT_PARTIAL and result.health["partial"]
    on_disk = json.loads((tmp_path / "out" / "reports" / "summary.json").read_text())["health"]["rows"]
    assert [r["check_name"] for r in on_disk if r["action"] == "flagged"] == ["model_test"]
    csv = (tmp_path / "out" / "reports" / "trace_health.csv").read_text()
    assert "model_test" in csv and "flagged" in csv


def test_the_cli_warns_and_exits_partial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profpipe.run, "load_models", _with_broken_invariant("rank_summary", "false"))
    result = CliRunner().invoke(app, ["analyse", str(FIXTURES / "mindspore_cpu"), "-o", str(tmp_path / "out")])
    assert result.exit_code == EXIT_PARTIAL
    assert "model rank_summary breaks its data test" in result.output and "model_test -> flagged" in result.output


@pytest.mark.parametrize("family", ["mindspore_cpu", "kineto", "nsys", "ascend_pt_text_min"])
def test_healthy_fixtures_have_no_flagged_rows(family: str, tmp_path: Path) -> None:
    result = run(FIXTURES / family, tmp_path / "out")
    assert [r for r in result.health["rows"] if r["check_name"] == "model_test"] == []
    assert result.exit_code == EXIT_COMPLETE


def test_one_scan_counts_as_each_test_alone() -> None:
    """The aggregate of all tests in one query finds exactly the failures (and counts) of each test run alone: a
    planted duplicate grain, a null, a share above 1 and a broken per-group invariant in one table."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1, 'a', 0.5, 10, 4), (1, 'a', 1.5, 10, 8), "
                "(2, NULL, 0.2, 3, 1), (3, 'c', NULL, 5, 9)) v(k, name, s, whole, part)")
    base = next(m for m in load_models() if m.name == "op_type_stats")
    model = dataclasses.replace(
        base, name="t", grain=("k", "name"), columns=(
            Column("name", "VARCHAR", "", tests=("not_null",)), Column("s", "DOUBLE", "", unit="share"),
            Column("k", "BIGINT", "", tests=("unique", {"range": [1, 2]}))),
        invariants=(Invariant("part <= whole", "parts within their whole"),
                    Invariant("sum(part) <= max(whole)", "per-group parts", ("k",))))
    found = {(f.test, f.rows) for f in check_models(con, [model])}
    assert found == {("unique grain (k, name)", 1), ("name not null", 1), ("s is a share (0-1)", 1),
                     ("k unique", 2), ("k within [1, 2]", 1), ("parts within their whole (part <= whole)", 1),
                     ("per-group parts (sum(part) <= max(whole) per k)", 2)}
