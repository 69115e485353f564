"""The user surface: the CLI's version, step list, query limits and formats, describe and check; the
Python API's MindSpore-compatible signature; the options object; data_simplification."""
from __future__ import annotations

import csv
import inspect
import io
import json

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import profpipe
from conftest import FIXTURES, run
from profpipe.cli import app
from profpipe.errors import UsageError
from profpipe.options import Options
from profpipe.run import VERSION

GPU = FIXTURES / "mindspore_gpu" / "graph_2x"


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    folder = tmp_path_factory.mktemp("surface") / "out"
    run(GPU, folder)
    return folder


def invoke(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_version():
    result = invoke("--version")
    assert result.exit_code == 0 and result.stdout.strip() == f"profpipe {VERSION}"


def test_query_prints_at_most_its_limit_and_says_so(out):
    total = int(invoke("query", out, "SELECT count(*) FROM host_op", "-f", "csv").stdout.splitlines()[1])
    assert total > 5
    limited = invoke("query", out, "SELECT * FROM host_op ORDER BY start_ns", "-f", "csv", "--limit", "5")
    assert limited.exit_code == 0
    assert len(list(csv.reader(io.StringIO(limited.stdout)))) == 1 + 5
    assert "showing the first 5 rows" in limited.stderr
    everything = invoke("query", out, "SELECT * FROM host_op", "-f", "csv", "--limit", "0")
    assert len(list(csv.reader(io.StringIO(everything.stdout)))) == 1 + total and not everything.stderr
    default = invoke("query", out, "SELECT * FROM range(150)")
    assert len(default.stdout.splitlines()) == 2 + 100 and "first 100 rows" in default.stderr


def test_query_formats_keep_values_exactly(out, tmp_path):
    sql = "SELECT '[memory] [red]x[/red]' AS name, 1.5 AS value, NULL AS missing"
    assert "[memory] [red]x[/red]" in invoke("query", out, sql).stdout
    assert json.loads(invoke("query", out, sql, "-f", "json").stdout) == [
        {"name": "[memory] [red]x[/red]", "value": "1.5", "missing": None}]
    target = tmp_path / "r.parquet"
    assert invoke("query", out, "SELECT * FROM host_op", "-f", "parquet", "--to", target, "-n", "0").exit_code == 0
    assert pq.read_table(target).num_rows == int(invoke("query", out, "SELECT count(*) FROM host_op", "-f", "csv")
                                                 .stdout.splitlines()[1])
    assert invoke("query", out, "SELECT 1", "-f", "parquet").exit_code == 2


def test_describe_documents_a_mart_and_refuses_an_unknown_name():
    listing = invoke("describe", "-f", "json")
    names = {e["name"] for e in json.loads(listing.stdout)}
    assert {"kernel_stats", "step_phases", "device_exec", "stg_host_op"} <= names
    assert "int_step" not in names  # private helpers only with --private
    entry = json.loads(invoke("describe", "kernel_stats", "-f", "json").stdout)
    total = next(c for c in entry["columns"] if c["name"] == "total_ns")
    assert total["unit"] == "ns" and total["type"] == "BIGINT" and total["description"]
    assert invoke("describe", "no_such_table").exit_code == 2


def test_check_runs_the_data_tests(out):
    result = invoke("check", out)
    assert result.exit_code == 0 and "every data test passed" in result.stderr


def test_step_list_on_the_cli_and_a_step_outside_the_data(tmp_path):
    result = invoke("analyse", GPU, "-o", tmp_path / "a", "--step-list", "2-3", "--quiet")
    assert result.exit_code == 0
    steps = invoke("query", tmp_path / "a", "SELECT min(step), max(step) FROM step_phases", "-f", "csv")
    assert steps.stdout.splitlines()[1] == "2,3"
    outside = invoke("analyse", GPU, "-o", tmp_path / "b", "--step-list", "8-9")
    assert outside.exit_code == 2
    assert "outside the data" in outside.stderr and "has steps 1-5" in outside.stderr
    assert not (tmp_path / "b").exists()
    assert invoke("analyse", GPU, "-o", tmp_path / "c", "--step-list", "x").exit_code == 2


def test_offline_analyse_takes_mindsporeʼs_parameters_in_mindsporeʼs_order():
    parameters = list(inspect.signature(profpipe.offline_analyse).parameters.values())
    assert [p.name for p in parameters[:4]] == ["path", "pretty", "step_list", "data_simplification"]
    assert [p.default for p in parameters[1:4]] == [False, None, True]
    assert "data_simplification" in profpipe.offline_analyse.__doc__


def test_data_simplification_keeps_the_tables_in_profile_duckdb_only(tmp_path):
    simple = profpipe.offline_analyse(GPU, output_path=tmp_path / "simple")
    assert not (simple.output / "tables").exists()
    full = profpipe.offline_analyse(GPU, data_simplification=False, output_path=tmp_path / "full")
    schema = pq.read_schema(full.output / "tables" / "device_exec.parquet")
    assert b"stream" in schema.field("stream_id").metadata[b"description"].lower()
    count = "SELECT count(*) FROM device_exec"
    assert invoke("query", simple.output, count).stdout == invoke("query", full.output, count).stdout


@pytest.mark.parametrize("bad", [dict(step_list=[1, 3]), dict(step_list=[0, 1]), dict(ranks=["0"]),
                                 dict(timeline_limit_mb=-1.0), dict(timeline_limit_mb=float("nan"))])
def test_options_refuse_bad_values(bad):
    with pytest.raises(UsageError):
        Options(**bad)


def test_a_missing_phase_is_said_not_printed_as_none():
    from profpipe.cli import _ms

    assert _ms(None) == "n/a (no FP/BP point)" and _ms(1.23456) == "1.235"


def test_timeline_limit_defaults_to_mindsporess_500_mb_and_0_means_no_limit():
    assert Options().timeline_limit_mb == 500.0  # MindSpore's Profiler(timeline_limit=500)
    assert Options(timeline_limit_mb=0).timeline_limit_mb is None
    assert Options(timeline_limit_mb=None).timeline_limit_mb is None
    assert Options(timeline_limit_mb=2).timeline_limit_mb == 2.0
    help_text = invoke("analyse", "--help").stdout
    assert "default 500" in " ".join(help_text.split()) and "0: no limit" in " ".join(help_text.split())


def _tree(root):
    return {p.relative_to(root): p.read_bytes() if p.is_file() else None for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("simplify", [True, False])
def test_data_simplification_never_touches_the_input(tmp_path, simplify):
    """MindSpore's data_simplification deletes files from the profiler folder; profpipe's leaves the input
    byte-identical (and no file is added to it) and keeps only its own output lean."""
    import shutil

    source = tmp_path / "in"
    shutil.copytree(GPU, source)
    before = _tree(source)
    result = profpipe.offline_analyse(source, data_simplification=simplify, output_path=tmp_path / "out")
    assert _tree(source) == before
    assert (result.output / "tables").exists() is (not simplify)


def test_op_analyse_refuses_an_unknown_op_with_a_runtime_error_as_mindspore(out):
    with pytest.raises(RuntimeError, match="not found"):
        profpipe.op_analyse(out, "NoSuchOpType")
    with pytest.raises(RuntimeError, match="no rank 99"):
        profpipe.op_analyse(out, "MatMul", device_id=99)


def _help_sections(text: str) -> dict[str, list[str]]:
    """A command's --help by section heading (an unindented line ending in ':'), each section's lines."""
    sections: dict[str, list[str]] = {}
    lines = sections.setdefault("", [])
    for line in text.splitlines():
        if line and not line[0].isspace() and line.endswith(":"):
            lines = sections.setdefault(line[:-1], [])
        else:
            lines.append(line)
    return sections


def test_every_commands_help_ends_with_an_example_that_parses():
    import shlex

    import typer

    group = typer.main.get_command(app)
    assert set(group.commands) >= {"analyse", "batch", "query", "describe", "check", "tables", "search", "report",
                                   "advise", "diff"}
    for name, command in group.commands.items():
        sections = _help_sections(invoke(name, "--help").stdout)
        example = sections.get("Example") or sections.get("Examples")
        assert example, f"{name} --help has no example"
        lines = [line.strip() for line in example if line.strip().startswith("profpipe ")]
        assert lines and all(line.split()[1] == name for line in lines), (name, example)
        for line in lines:  # the example's options and values are the command's own: it parses
            command.make_context(name, shlex.split(line)[2:])


def test_analyse_and_batch_help_group_their_options():
    sections = _help_sections(invoke("analyse", "--help").stdout)
    assert list(sections)[2:] == ["Input", "Output", "Steps and analysis", "Timeline", "MindSpore reports",
                                  "Performance", "Options", "Example"], list(sections)
    assert [line.split()[0] for line in sections["Options"] if line.strip()] == ["--help"]
    assert any("--step-list" in line for line in sections["Steps and analysis"])
    assert any("--workers" in line for line in sections["Performance"])
    batch_sections = _help_sections(invoke("batch", "--help").stdout)
    assert {"Runs", "Execution", "Output"} <= set(batch_sections)
    assert any("--run-depth" in line for line in batch_sections["Runs"])
