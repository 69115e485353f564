"""Start-up stays light (issue 32): `import profpipe`, the CLI module and every `--help` load none of the heavy
libraries, and a run loads only those its stages reach.

Each check runs in a fresh interpreter (this one has them all loaded) and lists what it imported. How long
start-up takes is benchmarks/run_startup.py's business, not a test's.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import FIXTURES, REPO
from profpipe.cli import app

#: Each costs from tens of milliseconds (plotly, rich) to tenths of a second (polars, pyarrow with numpy, DuckDB,
#: dask, jsonschema, pydantic: typer converts the arguments of a command that runs with it) to import.
HEAVY = ("duckdb", "pyarrow", "polars", "numpy", "plotly", "dask", "distributed", "pydantic", "jsonschema", "rich")

#: The stages of a run that profpipe.run imports only when the run reaches them.
LATE_STAGES = ("profpipe.advisor", "profpipe.export.summary", "profpipe.report", "profpipe.diff")


def _loaded_after(steps: dict[str, str], watched: tuple[str, ...] = HEAVY) -> dict[str, list[str]]:
    """Run each step's code, in order, in one fresh interpreter started in the checkout; after each step, the
    `watched` modules loaded so far."""
    lines = ["import json, sys", "seen = {}"]
    for name, code in steps.items():
        lines += [code, f"seen[{name!r}] = [m for m in {watched!r} if m in sys.modules]"]
    lines.append("print('\\n' + json.dumps(seen))")
    done = subprocess.run([sys.executable, "-c", "\n".join(lines)], cwd=REPO, capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.splitlines()[-1])


def _cli(args: list[str]) -> str:
    """Code that runs `profpipe ARGS` in-process and fails unless it exits with status 0."""
    return "\n".join(["from profpipe.cli import app",
                      "try:",
                      f"    app({args!r}, prog_name='profpipe')",
                      "except SystemExit as exit:",
                      "    assert exit.code == 0, exit.code"])


def test_import_profpipe_and_its_cli_load_no_heavy_library():
    seen = _loaded_after({"import profpipe": "import profpipe", "import profpipe.cli": "import profpipe.cli"})
    assert seen == {"import profpipe": [], "import profpipe.cli": []}


def test_every_help_and_version_load_no_heavy_library():
    commands = [command.name or command.callback.__name__ for command in app.registered_commands]
    assert "analyse" in commands and "diff" in commands
    runs = [["--help"], ["--version"], *([command, "--help"] for command in commands)]
    seen = _loaded_after({" ".join(args): _cli(args) for args in runs})
    assert seen == {" ".join(args): [] for args in runs}


def test_the_pipeline_module_leaves_the_report_the_advisor_and_the_exports_to_their_stages():
    """A worker process imports profpipe.run to read sources, and needs none of them."""
    seen = _loaded_after({"import profpipe.run": "import profpipe.run"}, HEAVY + LATE_STAGES)
    assert not {"polars", "plotly", "dask", "distributed", "jsonschema", "rich", *LATE_STAGES} & \
        set(seen["import profpipe.run"])


def test_a_small_mindspore_cpu_run_loads_no_dask_plotly_nor_the_diff(tmp_path: Path):
    """polars is the MindSpore text reader's; the report inlines the plotly.js it vendors (no Python plotly)."""
    dump = str(FIXTURES / "mindspore_cpu" / "lenet_graph")
    watched = HEAVY + ("profpipe.diff",)
    seen = _loaded_after({"--no-report": _cli(["analyse", dump, "-o", str(tmp_path / "a"), "-q", "--no-report"]),
                          "report": _cli(["analyse", dump, "-o", str(tmp_path / "b"), "-q"])}, watched)
    assert not {"plotly", "dask", "distributed", "profpipe.diff"} & set(seen["--no-report"])
    assert {"duckdb", "pyarrow", "polars"} <= set(seen["--no-report"])
    assert not {"plotly", "dask", "distributed", "profpipe.diff"} & set(seen["report"])
