"""The output folder contract: layout, atomic replacement, read-only inputs, manifest, SQL access."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import duckdb
import jsonschema
import pytest

from conftest import FIXTURES, REPO, run
from profpipe.errors import InputError, ProfpipeError
from profpipe.models import load_models
from profpipe.tables import catalog

GPU = FIXTURES / "mindspore_gpu" / "graph_2x"


def _snapshot(folder: Path) -> dict[str, str]:
    """Every entry under folder: file content hash and mode, or 'dir'."""
    return {str(p.relative_to(folder)): "dir" if p.is_dir() else
            hashlib.sha256(p.read_bytes()).hexdigest() + oct(p.stat().st_mode)
            for p in sorted(folder.rglob("*"))}


def test_layout_and_manifest(tmp_path):
    out = tmp_path / "out"
    run(GPU, out)
    assert {p.name for p in out.iterdir()} == {"tables", "profile.duckdb", "reports", "timeline", "manifest.json", "findings.json",
                                               ".profpipe-output"}
    assert {p.stem for p in (out / "tables").glob("*.parquet")} == set(catalog())
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["timings_s"]) == {"discover", "ingest", "merge", "models", "checks", "export"}
    assert manifest["versions"]["duckdb"] == duckdb.__version__
    files = manifest["sources"][0]["files"]
    assert {f["role"] for f in files} >= {"gpu_op_timestamp", "activity_timestamp", "step_trace"}
    for entry in files:
        assert entry["bytes"] == Path(entry["path"]).stat().st_size
        assert entry["fingerprint"].startswith("blake2b-edges:")
    assert manifest["row_counts"]["device_exec"] == 55
    assert not list(tmp_path.glob(".out.*")), "temporary folders left behind"


def test_a_pytorch_trace_is_analysed_where_polars_is_not_installed(tmp_path, monkeypatch):
    """polars is imported only by the readers that need it: a machine without it (a GPU node's image) still
    analyses PyTorch traces, and the manifest says polars is not there."""
    from importlib import metadata

    real_version = metadata.version

    def version(package: str) -> str:
        if package == "polars":
            raise metadata.PackageNotFoundError(package)
        return real_version(package)

    monkeypatch.setattr(metadata, "version", version)
    out = tmp_path / "out"
    run(FIXTURES / "kineto" / "current", out)
    versions = json.loads((out / "manifest.json").read_text())["versions"]
    assert versions["polars"] is None and versions["duckdb"] == duckdb.__version__


def test_input_folder_is_untouched(tmp_path):
    copy = tmp_path / "in"
    shutil.copytree(GPU, copy)
    before = _snapshot(copy)
    run(copy, tmp_path / "out")
    assert _snapshot(copy) == before


def test_output_inside_input_is_refused(tmp_path):
    copy = tmp_path / "in"
    shutil.copytree(GPU, copy)
    with pytest.raises(ProfpipeError, match="is the input or inside it"):
        run(copy, copy / "out")
    assert not (copy / "out").exists()


def test_failed_run_keeps_the_earlier_good_output(tmp_path):
    out = tmp_path / "out"
    run(GPU, out)
    good = _snapshot(out)
    broken = tmp_path / "broken"
    shutil.copytree(GPU, broken)
    (broken / "profiler" / "gpu_op_execute_timestamp_0.txt").write_text("garbage without separators\n")
    with pytest.raises(InputError):
        run(broken, out, strict=True)
    assert _snapshot(out) == good
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken", "out"]


def test_leftovers_of_a_killed_run_are_swept(tmp_path):
    dead_pid = 2**22 + 12345  # above the default pid_max: no such process
    leftover = tmp_path / f".out.tmp-{dead_pid}"
    (leftover / "tables").mkdir(parents=True)
    run(GPU, tmp_path / "out")
    assert not leftover.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_an_earlier_output_moved_aside_by_a_killed_run_is_put_back(tmp_path):
    """A run killed (SIGKILL, power loss) between its two renames leaves the earlier output as `.out.old-<pid>` and no
    `out`: the next run puts it back, so a run that then fails leaves the earlier good output, not nothing."""
    dead_pid = 2**22 + 12345  # above the default pid_max: no such process
    out = tmp_path / "out"
    run(GPU, out)
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    out.rename(tmp_path / f".out.old-{dead_pid}")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "rank-0.pt.trace.json").write_text("{ not json")
    with pytest.raises(ProfpipeError):
        run(broken, out)
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken", "out"]


def test_rerun_replaces_the_output(tmp_path):
    out = tmp_path / "out"
    run(FIXTURES / "mindspore_gpu" / "two_ranks", out)
    (out / "stale.txt").write_text("from an earlier run")
    run(GPU, out)
    assert not (out / "stale.txt").exists()
    assert json.loads((out / "reports" / "summary.json").read_text())["input"] == str(GPU)


def test_profile_duckdb_answers_sql_from_the_output_folder(tmp_path):
    out = tmp_path / "out"
    run(GPU, out)
    moved = tmp_path / "moved"
    out.rename(moved)
    cwd = os.getcwd()
    os.chdir(moved)
    try:
        with duckdb.connect("profile.duckdb", read_only=True) as con:
            for name in list(catalog()) + [m.name for m in load_models()]:
                con.execute(f"SELECT count(*) FROM {name}").fetchone()
            assert con.execute("SELECT sum(occurrences) FROM op_type_stats WHERE side = 'Device'").fetchone()[0] == 50
    finally:
        os.chdir(cwd)


def test_summary_matches_its_schema(tmp_path):
    out = tmp_path / "out"
    run(FIXTURES / "mindspore_gpu" / "two_ranks", out)
    summary = json.loads((out / "reports" / "summary.json").read_text())
    schema = json.loads((REPO / "schemas" / "summary.schema.json").read_text())
    jsonschema.validate(summary, schema)
    assert [r["rank"] for r in summary["ranks"]] == [0, 1]
    assert summary["ranks"][0]["steps"]["count"] == 3


def test_step_list_keeps_only_those_steps(tmp_path):
    import profpipe

    result = profpipe.offline_analyse(GPU, output_path=tmp_path / "out", step_list=[2, 3])
    assert result.summary["ranks"][0]["steps"]["count"] == 2
    with duckdb.connect(str(tmp_path / "out" / "profile.duckdb"), read_only=True) as con:
        assert con.execute("SELECT min(step), max(step) FROM step_phases").fetchone() == (2, 3)
        # 10 GPU ops per step; ops of steps 1, 4 and 5 are dropped
        assert con.execute("SELECT count(*) FROM host_op WHERE side = 'Device'").fetchone()[0] == 20
    with pytest.raises(ProfpipeError, match="consecutive"):
        profpipe.offline_analyse(GPU, output_path=tmp_path / "out2", step_list=[1, 3])


def test_offline_analyse_default_output_is_beside_not_inside(tmp_path, monkeypatch):
    import profpipe

    monkeypatch.chdir(tmp_path)
    result = profpipe.offline_analyse(GPU)
    assert result.output == tmp_path / "graph_2x.profpipe"
    assert (tmp_path / "graph_2x.profpipe" / "manifest.json").is_file()


