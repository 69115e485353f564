"""MindSpore's add_metadata: profiler_metadata.json beside a dump reaches run_info, summary.json and the manifest;
a damaged file costs only itself, with a trace_health row (file and line)."""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import FIXTURES, assert_generator_reproduces, query, run
from profpipe.discover import discover
from profpipe.ingest import user_metadata

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "generators"))
from profiler_metadata import METADATA  # noqa: E402  the generator's ground truth

GPU = FIXTURES / "mindspore_gpu" / "graph_2x"
META = FIXTURES / "profiler_metadata" / "profiler_metadata.json"


def test_generator_reproduces_the_fixture(tmp_path):
    assert_generator_reproduces("profiler_metadata.py", FIXTURES / "profiler_metadata", tmp_path)


def _dump_with(tmp_path: Path, data: bytes) -> Path:
    source = tmp_path / "in"
    shutil.copytree(GPU, source)
    (source / "profiler_metadata.json").write_bytes(data)
    return source


def test_user_metadata_reaches_run_info_summary_and_manifest(tmp_path):
    result = run(_dump_with(tmp_path, META.read_bytes()), tmp_path / "out")
    out = result.output
    summary = json.loads((out / "reports" / "summary.json").read_text(encoding="utf-8"))
    assert summary["user_metadata"] == [{"path": "profiler_metadata.json", "metadata": METADATA}]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["user_metadata"] == summary["user_metadata"]
    texts = [t for (t,) in query(out, "SELECT metadata_json FROM run_info")]
    assert texts and all(json.loads(t)["profiler_metadata"] == METADATA for t in texts)
    assert query(out, "SELECT count(*) FROM trace_health WHERE source LIKE '%profiler_metadata.json'") == [(0,)]


def test_no_metadata_file_is_an_empty_list(tmp_path):
    out = run(GPU, tmp_path / "out").output
    assert json.loads((out / "reports" / "summary.json").read_text(encoding="utf-8"))["user_metadata"] == []


def test_discovery_walks_once_and_gives_each_source_its_nearest_file(tmp_path, monkeypatch):
    """One walk of the input finds the metadata files with the sources' files; each source owns the nearest file at or
    above its folder (a rank's own `*_ascend_ms` copy over one at the top), and a linked file is never read."""
    source = tmp_path / "in"
    shutil.copytree(FIXTURES / "ascend_ms_cluster", source / "cluster")
    shutil.copytree(GPU, source / "gpu")
    (source / "profiler_metadata.json").write_bytes(META.read_bytes())
    linked = source / "gpu" / "profiler" / "profiler_metadata.json"
    linked.symlink_to(source / "cluster" / sorted((source / "cluster").iterdir())[0].name / "profiler_metadata.json")
    walked: list[str] = []
    real_walk = os.walk

    def counting_walk(top, *args, **kwargs):
        walked.append(str(top))
        return real_walk(top, *args, **kwargs)

    monkeypatch.setattr(os, "walk", counting_walk)
    owners = {(s.family, s.rank): s.user_metadata.relative_to(source).as_posix() for s in discover(source)}
    ranks = sorted((source / "cluster").iterdir())
    assert owners == {("msprof_export", 0): f"cluster/{ranks[0].name}/profiler_metadata.json",
                      ("msprof_export", 1): f"cluster/{ranks[1].name}/profiler_metadata.json",
                      ("ascend_summary", 0): f"cluster/{ranks[0].name}/profiler_metadata.json",
                      ("ascend_summary", 1): f"cluster/{ranks[1].name}/profiler_metadata.json",
                      ("mindspore_framework", 0): "profiler_metadata.json"}
    walked.clear()
    out = run(source, tmp_path / "out").output
    assert walked.count(str(source)) == 1 and not any(w.startswith(str(source) + os.sep) for w in walked)
    assert [e["path"] for e in json.loads((out / "manifest.json").read_text())["user_metadata"]] == [
        f"cluster/{ranks[0].name}/profiler_metadata.json", f"cluster/{ranks[1].name}/profiler_metadata.json",
        "profiler_metadata.json"]
    assert sorted(query(out, "SELECT rank, layout, metadata_json->'$.profiler_metadata' FROM run_info"), key=str) == sorted([
        (0, "ascend_era_f", '{"rank_id":"0"}'), (1, "ascend_era_f", '{"rank_id":"1"}'),
        (0, "ascend_summary", '{"rank_id":"0"}'), (1, "ascend_summary", '{"rank_id":"1"}'),
        (0, "flat", json.dumps(METADATA, ensure_ascii=False, separators=(",", ":")))], key=str)


def _read(data: bytes, tmp_path: Path):
    path = tmp_path / "profiler_metadata.json"
    path.write_bytes(data)
    rows = []
    return user_metadata.read(path, lambda message, **kw: rows.append((message, kw))), rows


def test_damage_bad_json_non_object_huge_value_bad_utf8(tmp_path):
    value, rows = _read(b'{\n  "a": "x",\n  "b": \n}', tmp_path)
    assert value is None and len(rows) == 1
    assert rows[0][1]["check"] == "malformed_record" and rows[0][1]["action"] == "dropped" and rows[0][1]["line"] == 4
    value, rows = _read(b"[1, 2]", tmp_path)
    assert value is None and rows[0][1]["check"] == "malformed_record"
    value, rows = _read(json.dumps({"big": "x" * 100_000, "ok": 1}).encode(), tmp_path)
    assert value == {"big": "<100002 characters, left out>", "ok": 1}
    assert [r[1]["action"] for r in rows] == ["clamped"]
    value, rows = _read(b'{"k": "caf\xe9"}', tmp_path)
    assert value == {"k": "caf\ufffd"} and rows[0][1]["check"] == "bad_encoding" and rows[0][1]["offset"] == 10  # the byte after {"k": "caf
    value, rows = _read(b'{"n": NaN}', tmp_path)
    assert value == {} and rows[0][1]["check"] == "non_finite"


def test_a_bad_file_costs_only_itself_in_a_run(tmp_path):
    result = run(_dump_with(tmp_path, b"{not json"), tmp_path / "out")
    assert result.exit_code == 3
    rows = query(result.output, "SELECT check_name, action, first_line FROM trace_health "
                                "WHERE source LIKE '%profiler_metadata.json'")
    assert rows == [("malformed_record", "dropped", 1)]
    summary = json.loads((result.output / "reports" / "summary.json").read_text(encoding="utf-8"))
    assert summary["user_metadata"] == [] and summary["ranks"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300) | st.builds(lambda d: json.dumps(d).encode(), st.dictionaries(
    st.text(max_size=5), st.recursive(st.none() | st.floats() | st.text(max_size=20), st.lists, max_leaves=8))))
def test_any_bytes_give_an_object_or_a_row(tmp_path, data):
    value, rows = _read(data, tmp_path)
    if value is None:  # left out: exactly one dropping row says why
        assert [r[1]["action"] for r in rows if r[1]["action"] == "dropped"] == ["dropped"]
    else:
        assert isinstance(value, dict)
        json.dumps(value, allow_nan=False)  # every kept value can be written into the reports
        assert all(len(json.dumps(v)) <= user_metadata.VALUE_LIMIT for v in value.values())
