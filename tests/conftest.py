"""Shared paths and helpers for the tests."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from profpipe.options import Options
from profpipe.run import RunResult, analyse

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
REALDATA = REPO.parent / "shared" / "realdata"


def realdata(relative: str) -> Path:
    """A file under ../shared/realdata, or skip the test when that folder is not beside the checkout."""
    path = REALDATA / relative
    if not path.exists():
        pytest.skip(f"real data not available: {path} (../shared/realdata is not beside this checkout)")
    return path


def run(source: Path, out: Path, **options) -> RunResult:
    """Analyse `source` into `out` with Options(**options); the tests read tables/ too, so the Parquet
    copies are kept unless `data_simplification=True` is given; report.html only with `visual_report=True`; the
    timeline is the full one, uncompressed, unless `timeline` or `timeline_gzip` says otherwise (test_timeline.py
    tests the defaults)."""
    options.setdefault("data_simplification", False)
    options.setdefault("timeline", "full")
    options.setdefault("timeline_gzip", False)
    options.setdefault("visual_report", False)  # tests/test_report.py asks for it
    return analyse(source, out, Options(**options))


def load_trace(out: Path) -> dict:
    return json.loads((out / "timeline" / "trace.json").read_text())


def query(out: Path, sql: str) -> list[tuple]:
    """Rows of `sql` run on the output folder's profile.duckdb (read-only)."""
    with duckdb.connect(str(out / "profile.duckdb"), read_only=True) as con:
        return con.execute(sql).fetchall()


def assert_generator_reproduces(generator: str, fixture: Path, tmp_path: Path, *options: str) -> None:
    """Running fixtures/generators/<generator> again (with `options`) writes exactly the committed fixture files."""
    subprocess.run([sys.executable, str(REPO / "fixtures" / "generators" / generator), str(tmp_path), *options],
                   check=True)
    for fresh in tmp_path.rglob("*"):
        if fresh.is_file():
            assert fresh.read_bytes() == (fixture / fresh.relative_to(tmp_path)).read_bytes(), fresh
