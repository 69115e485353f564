"""Shared paths and helpers for the tests."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.run import RunResult, analyse

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
REALDATA = REPO.parent / "shared" / "realdata"


def realdata(relative: str) -> Path:
    """A file under ../shared/realdata, or skip the test when that folder is not beside the checkout."""
    path = REALDATA / relative
    if not path.exists():
        pytest.skip(f"real data not available: {path} (../shared/realdata is not beside this checkout)")
    return path


def run(source: Path, out: Path, **kwargs) -> RunResult:
    return analyse(source, out, **kwargs)


def load_trace(out: Path) -> dict:
    return json.loads((out / "timeline" / "trace.json").read_text())
