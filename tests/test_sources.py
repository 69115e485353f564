"""The source model (issue 16): several sources of one rank are merged, not skipped.

Each folder case is built in tmp_path from committed fixtures, analysed whole, and compared with the same
sources analysed one by one: every source's rows are there (row counts equal the sum of the sources read
alone), successive cycles of a rank are numbered captures with their own steps, a raw msprof folder and its
export keep the more complete copy and say so in trace_health, ranks come from the file, the name or
--rank-map, and a trace without one is an error that names it and says what to do.
"""
from __future__ import annotations

import json
from collections import Counter
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from conftest import FIXTURES, query, realdata, run
import profpipe.export.chrome_trace
from profpipe.cli import app
from profpipe.discover import discover, load_rank_map, task_records
from profpipe.errors import ProfpipeError, UsageError
from profpipe.export.chrome_trace import TimelineResult

CPU = FIXTURES / "mindspore_cpu" / "lenet_graph" / "vm_4374_20261121001621178_ascend_ms"
MINDDATA = FIXTURES / "minddata_mindspore" / "slow_generator"
KINETO_V2021 = FIXTURES / "kineto" / "v2021" / "worker0.pt.trace.json"
KINETO_RANK0 = FIXTURES / "kineto" / "current" / "rank-0.pt.trace.json"
RAW_JOB = FIXTURES / "ascend_raw" / "era_c" / "PROF_000001_20220101000000000_AAAAAAAAAAAAAAAA"
EXPORT_JOB = FIXTURES / "msprof_timeline" / "PROF_000001_20260101000000000_FIXTUREFIXTUREAB"

#: Tables every source writes once per source (the rest are data rows that add up across sources).
_PER_SOURCE = {"run_info", "trace_health"}


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("expected", "expected.json"))
    return target


def _data_counts(result) -> dict[str, int]:
    return {t: n for t, n in result.row_counts.items() if n and t not in _PER_SOURCE}


def _summed(*results) -> dict[str, int]:
    total: dict[str, int] = {}
    for result in results:
        for table, n in _data_counts(result).items():
            total[table] = total.get(table, 0) + n
    return total


def _timeline_events(out: Path) -> int:
    return len(json.loads((out / "timeline" / "trace.json").read_text())["traceEvents"])


def _minddata_beside_cpu(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    _copy(CPU, folder / "profiler" / CPU.name)
    _copy(MINDDATA, folder / "dataset_logs")
    return folder


def test_minddata_folder_beside_a_cpu_dump_joins_its_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    folder = _minddata_beside_cpu(tmp_path)
    sources = discover(folder)
    assert [(s.family, s.rank, s.capture) for s in sources] == [("mindspore_framework", 0, 0)]
    assert any(role.startswith("minddata:") for role in sources[0].files)

    # MindData's steady clock beside the dump's epoch clock: the timeline is test_..._timeline's business
    monkeypatch.setattr(profpipe.export.chrome_trace, "write_timeline",
                        lambda con, path, *rest: TimelineResult(path, 0, 0, 0))
    result = run(folder, tmp_path / "out")
    assert result.skipped == [] and result.ranks == [0]
    cpu_alone = run(CPU, tmp_path / "cpu")
    minddata_alone = run(_copy(MINDDATA, tmp_path / "md"), tmp_path / "md_out")
    assert _data_counts(result) == _summed(cpu_alone, minddata_alone)
    assert query(tmp_path / "out", "SELECT DISTINCT capture FROM host_op") == [(0,)]
    # the numbers of each part are those of the part read alone
    assert query(tmp_path / "out", "SELECT * FROM step_phases ORDER BY ALL") == \
        query(tmp_path / "cpu", "SELECT * FROM step_phases ORDER BY ALL")
    assert query(tmp_path / "out", "SELECT * FROM data_op_stats ORDER BY ALL") == \
        query(tmp_path / "md_out", "SELECT * FROM data_op_stats ORDER BY ALL")


def test_minddata_folder_beside_a_cpu_dump_timeline(tmp_path: Path):
    """The two sources are on different clocks (MindData's steady clock beside the dump's): the timeline holds
    every span and counter of each, as each alone gives them."""
    run(_minddata_beside_cpu(tmp_path), tmp_path / "out")
    run(CPU, tmp_path / "cpu")
    run(MINDDATA, tmp_path / "minddata")
    combined, cpu, minddata = (_phases(tmp_path / name) for name in ("out", "cpu", "minddata"))
    for phase in ("X", "C"):
        assert combined.get(phase, 0) == cpu.get(phase, 0) + minddata.get(phase, 0) > 0


def _phases(out: Path) -> dict[str, int]:
    events = json.loads((out / "timeline" / "trace.json").read_text())["traceEvents"]
    return dict(Counter(e["ph"] for e in events))


def test_minddata_alone_stays_a_source_of_its_own(tmp_path: Path):
    folder = tmp_path / "run"
    _copy(MINDDATA, folder / "logs")
    shutil.copy(KINETO_V2021, folder / "worker1.pt.trace.json")  # not a MindSpore source: no owner
    assert sorted((s.family, s.rank) for s in discover(folder)) == [("kineto", 1), ("minddata", 0)]


def test_two_profiling_cycles_of_one_rank_are_two_captures(tmp_path: Path):
    folder = tmp_path / "traces"
    folder.mkdir()
    # natural order: cycle 9 before cycle 10 (the number in tensorboard's names is a time in ms)
    trace = json.loads(KINETO_V2021.read_text())
    shutil.copy(KINETO_V2021, folder / "worker0.9.pt.trace.json")
    trace["traceEvents"] = [e for e in trace["traceEvents"] if e.get("cat") != "Kernel"]  # a cycle without kernels
    kernels = [e for e in json.loads(KINETO_V2021.read_text())["traceEvents"] if e.get("cat") == "Kernel"]
    (folder / "worker0.10.pt.trace.json").write_text(json.dumps(trace))
    # the same start times: the natural file order decides (capture numbers follow time, then file order)
    cycles = [folder / "worker0.9.pt.trace.json", folder / "worker0.10.pt.trace.json"]

    result = run(folder, tmp_path / "out")
    assert result.skipped == [] and result.ranks == [0]
    alone = [run(trace, tmp_path / f"alone{capture}") for capture, trace in enumerate(cycles)]
    assert _data_counts(result) == _summed(*alone)
    out = tmp_path / "out"
    assert query(out, "SELECT capture, count(*) FROM run_info GROUP BY ALL ORDER BY ALL") == [(0, 1), (1, 1)]
    # each cycle keeps its own steps: step 1 of cycle 0 and step 1 of cycle 1 are two rows
    steps = query(tmp_path / "alone0", "SELECT step, start_ns, fp_ns, end_ns FROM step_phases ORDER BY step")
    assert len(steps) == 2
    assert query(out, "SELECT capture, step, start_ns, fp_ns, end_ns FROM step_phases ORDER BY ALL") == \
        [(0, *s) for s in steps] + [(1, *s) for s in steps]
    assert query(out, "SELECT capture, count(*) FROM device_exec WHERE kind = 'kernel' GROUP BY ALL ORDER BY ALL") == \
        [(0, len(kernels))]
    # every step model of a capture is that of its trace read alone (no row of the other cycle mixed in)
    for model in ("step_phases", "step_overlap", "step_gpu_time", "overlap_segment"):
        for capture in (0, 1):
            assert query(out, f"SELECT * EXCLUDE (capture) FROM {model} WHERE capture = {capture} ORDER BY ALL") == \
                query(tmp_path / f"alone{capture}", f"SELECT * EXCLUDE (capture) FROM {model} ORDER BY ALL"), model
    summary = json.loads((out / "reports" / "summary.json").read_text())
    assert [r["rank"] for r in summary["ranks"]] == [0]  # one entry per rank, whatever its captures
    manifest = json.loads((out / "manifest.json").read_text())
    assert [(s["capture"], Path(s["files"][0]["path"]).name) for s in manifest["sources"]] == [
        (0, "worker0.9.pt.trace.json"), (1, "worker0.10.pt.trace.json")]
    assert _timeline_events(out) > 0


def _msprof_job(tmp_path: Path, raw_complete: bool) -> Path:
    """One PROF_* job holding a raw device folder (era C) and an msprof export (era D) of device 0."""
    job = tmp_path / "job" / EXPORT_JOB.name
    _copy(EXPORT_JOB, job)
    shutil.copytree(RAW_JOB / "device_0" / "data", job / "device_0" / "data")
    if not raw_complete:  # a raw folder cut short: only the first HWTS slice (2 task records' worth)
        (job / "device_0" / "data" / "hwts.data.0.slice_1").unlink()
    return job.parent


def _later_era_a_job(job: Path, ticks: int) -> None:
    """Move an era A job's device times (HWTS records, step-trace points) `ticks` later: a later cycle."""
    for name, size, at in (("hwts.log.data.45.dev.profiler_default_tag.0.slice_0", 64, 8),
                           ("data/training_trace.46.dev.profiler_default_tag.0.slice_0", 20, 12)):
        data = bytearray((job / name).read_bytes())
        for start in range(at, len(data), size):
            data[start:start + 8] = (int.from_bytes(data[start:start + 8], "little") + ticks).to_bytes(8, "little")
        (job / name).write_bytes(bytes(data))


def test_two_raw_ascend_cycles_of_one_rank_get_their_own_step_files(tmp_path: Path):
    """Step-keyed compatible files are written per capture; op files cover both cycles together."""
    root = tmp_path / "in"
    for job in ("JOB1", "JOB2"):
        shutil.copytree(FIXTURES / "ascend_raw" / "era_a" / "JOB1", root / job)
    _later_era_a_job(root / "JOB2", 10**8)  # one second later (100 MHz): a second cycle, not a copy
    shutil.copytree(root / "JOB2", tmp_path / "second" / "JOB2")
    both = run(root, tmp_path / "both").output / "reports"
    assert query(tmp_path / "both", "SELECT count(*) FROM trace_health WHERE check_name = 'conflicting_entry'") == [(0,)]
    alone = run(FIXTURES / "ascend_raw" / "era_a", tmp_path / "alone").output / "reports"
    second = run(tmp_path / "second", tmp_path / "second_out").output / "reports"
    step_file = "step_trace_raw_0_detail_time.csv"
    assert (both / step_file).read_bytes() == (alone / step_file).read_bytes()
    assert (both / "step_trace_raw_0_detail_time_capture1.csv").read_bytes() == (second / step_file).read_bytes()
    assert (both / "step_trace_point_info_0_capture1.json").is_file()
    assert [(r, c) for r, c in query(tmp_path / "both", "SELECT rank, capture FROM rank_info ORDER BY 2")] == [(0, 0), (0, 1)]
    # the op table counts the executions of both cycles: twice those of one
    twice = query(tmp_path / "both", "SELECT sum(executions) FROM device_op_stats")[0][0]
    assert twice == 2 * query(tmp_path / "alone", "SELECT sum(executions) FROM device_op_stats")[0][0]


@pytest.mark.parametrize("raw_complete", [True, False])
def test_raw_msprof_folder_and_its_export_keep_the_more_complete(tmp_path: Path, raw_complete: bool):
    folder = _msprof_job(tmp_path, raw_complete)
    sources = discover(folder)
    by_family = {s.family: s for s in sources}
    raw, export = by_family["ascend_raw"], by_family["msprof_export"]
    assert task_records(export) == 10  # 5 + 5 op summary rows
    assert task_records(raw) == (337 + 2415) // 128 if raw_complete else 337 // 128
    winner, loser = (raw, export) if raw_complete else (export, raw)
    assert loser.superseded_by == winner.directory and winner.superseded_by is None

    result = run(folder, tmp_path / "out")
    assert result.skipped == [] and result.exit_code == 0
    health = query(tmp_path / "out", "SELECT source, check_name, action FROM trace_health WHERE check_name = 'superseded'")
    assert health == [(str(loser.directory), "superseded", "superseded")]
    # the winner's rows, exactly: read alone from a copy of its own files
    alone_dir = tmp_path / "alone"
    if winner is raw:
        shutil.copytree(folder / EXPORT_JOB.name / "device_0" / "data", alone_dir / "PROF_1" / "device_0" / "data")
        shutil.copy(folder / EXPORT_JOB.name / "device_0" / "info.json.0", alone_dir / "PROF_1" / "device_0")
    else:
        shutil.copytree(EXPORT_JOB, alone_dir / EXPORT_JOB.name)
    alone = run(alone_dir, tmp_path / "alone_out")
    assert _data_counts(result) == _data_counts(alone)
    assert query(tmp_path / "out", "SELECT layout FROM run_info") == query(tmp_path / "alone_out",
                                                                            "SELECT layout FROM run_info")
    assert _timeline_events(tmp_path / "out") > 0


def _unranked_traces(tmp_path: Path, n: int, nsys: bool = False) -> Path:
    folder = tmp_path / "traces"
    (folder / "sub").mkdir(parents=True)
    for i in range(n):
        shutil.copy(KINETO_V2021, (folder / "sub" if i % 2 else folder) / f"trainer_{chr(97 + i)}.json")
    if nsys:
        shutil.copy(FIXTURES / "nsys" / "report1.sqlite", folder / "report.sqlite")
    return folder


def test_traces_without_a_rank_are_an_error_each_that_names_the_file_and_rank_map(tmp_path: Path):
    folder = _unranked_traces(tmp_path, 3, nsys=True)
    sources = discover(folder)
    assert len(sources) == 4 and all(s.rank == -1 and "--rank-map FILE" in s.problem for s in sources)
    with pytest.raises(ProfpipeError) as error:
        run(folder, tmp_path / "out")
    message = str(error.value)
    for name in ("trainer_a.json", "sub/trainer_b.json", "trainer_c.json"):
        assert f"{folder / name}: cannot tell its rank: no distributedInfo.rank in the trace and no rank in the " \
               "file name (rank-<n>, worker<n>); name the files by rank, or pass --rank-map FILE" in message
    assert f"{folder / 'report.sqlite'}: cannot tell its rank: no rank in the file name" in message
    assert message.count("--rank-map FILE") == 4 and "skipped" not in message


def test_rank_map_lines_and_json(tmp_path: Path):
    folder = _unranked_traces(tmp_path, 3)
    lines = tmp_path / "ranks.txt"
    lines.write_text("# path or glob, then the rank\ntrainer_a.json 4\nsub/*.json 7\n\n*trainer_c* 2\n")
    assert load_rank_map(lines) == [("trainer_a.json", 4), ("sub/*.json", 7), ("*trainer_c*", 2)]
    result = run(folder, tmp_path / "out", rank_map=lines)
    assert result.ranks == [2, 4, 7] and result.skipped == []
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert {(Path(s["files"][0]["path"]).name, s["rank"], s["rank_from"]) for s in manifest["sources"]} == {
        ("trainer_a.json", 4, "rank-map"), ("trainer_b.json", 7, "rank-map"), ("trainer_c.json", 2, "rank-map")}
    alone = run(folder / "trainer_a.json", tmp_path / "alone")
    assert result.row_counts["device_exec"] == 3 * alone.row_counts["device_exec"]

    as_json = tmp_path / "ranks.json"
    as_json.write_text(json.dumps({"sub": 1, "trainer_*.json": 0}))  # a folder names every file in it
    # trainer_a and trainer_c: rank 0, sub's trainer_b: rank 1 (the first pattern that matches wins); trainer_c holds
    # trainer_a's bytes: a copy, superseded (read twice, rank 0's ops would count twice)
    sources = discover(folder, rank_map=as_json)
    assert sorted((s.rank, s.files["trace"].name, s.superseded_by) for s in sources) == [
        (0, "trainer_a.json", None), (0, "trainer_c.json", folder / "trainer_a.json"), (1, "trainer_b.json", None)]
    mapped = run(folder, tmp_path / "json", rank_map=as_json)
    assert mapped.exit_code == 0
    assert sorted(query(mapped.output, "SELECT rank, capture FROM run_info")) == [(0, 0), (1, 0)]
    assert query(mapped.output, "SELECT check_name, action, source FROM trace_health") == [
        ("superseded", "superseded", str(folder / "trainer_c.json"))]


def test_rank_map_from_the_command_line_and_its_errors(tmp_path: Path):
    folder = _unranked_traces(tmp_path, 2)
    ranks = tmp_path / "ranks.txt"
    ranks.write_text("trainer_a.json 0\nsub/trainer_b.json 1\n")
    runner = CliRunner()
    done = runner.invoke(app, ["analyse", str(folder), "-o", str(tmp_path / "out"), "--rank-map", str(ranks)])
    assert done.exit_code == 0, done.output
    assert query(tmp_path / "out", "SELECT rank FROM run_info ORDER BY rank") == [(0,), (1,)]
    for text, problem in (("trainer_a.json\n", "expected '<path or glob> <rank>'"),
                          ("trainer_a.json -1\n", "must be a whole number >= 0"), ('{"a": "x"}', "whole number")):
        ranks.write_text(text)
        with pytest.raises(UsageError, match=problem):
            load_rank_map(ranks)
        bad = runner.invoke(app, ["analyse", str(folder), "-o", str(tmp_path / "bad"), "--rank-map", str(ranks)])
        assert bad.exit_code == 2 and problem.split()[0] in bad.output
    missing = runner.invoke(app, ["analyse", str(folder), "-o", str(tmp_path / "bad"), "--rank-map",
                                  str(tmp_path / "nope.txt")])
    assert missing.exit_code == 2 and "no such file" in missing.output


def test_the_file_name_and_the_file_beat_the_rank_map(tmp_path: Path):
    folder = tmp_path / "traces"
    folder.mkdir()
    shutil.copy(KINETO_V2021, folder / "worker3.pt.trace.json")
    shutil.copy(FIXTURES / "kineto" / "current" / "rank-0.pt.trace.json", folder / "trace.json")
    ranks = tmp_path / "ranks.txt"
    ranks.write_text("* 9\n")
    reports = []
    sources = discover(folder, rank_map=ranks, warn=lambda message, **details: reports.append((message, details)))
    assert sorted((s.files["trace"].name, s.rank, s.rank_from) for s in sources) == [
        ("trace.json", 0, "file"), ("worker3.pt.trace.json", 3, "name")]
    assert sorted(m for m, _ in reports) == [
        f"{folder / 'trace.json'}: --rank-map gives rank 9, but its file says rank 0; rank 0 kept (the map only "
        "ranks sources that name no rank)",
        f"{folder / 'worker3.pt.trace.json'}: --rank-map gives rank 9, but its name says rank 3; rank 3 kept (the "
        "map only ranks sources that name no rank)"]
    assert {(d["check"], d["action"]) for _, d in reports} == {("conflicting_entry", "kept")}


@pytest.mark.parametrize("relative", ["kineto/current/rank-1.pt.trace.json.gz", "kineto/v2021/worker0.pt.trace.json",
                                      "nsys/report1.sqlite", "minddata_mindspore/slow_generator/pipeline_profiling_0.json"])
def test_a_single_file_that_stands_alone(tmp_path: Path, relative: str):
    result = run(FIXTURES / relative, tmp_path / "out")
    assert result.skipped == [] and len(result.ranks) == 1
    assert sum(_data_counts(result).values()) > 0


@pytest.mark.parametrize("relative, folder", [
    (f"ascend_raw/era_c/{RAW_JOB.name}/device_0/data/hwts.data.0.slice_0", f"ascend_raw/era_c/{RAW_JOB.name}"),
    (f"msprof_timeline/{EXPORT_JOB.name}/device_0/summary/op_summary_0_1_1.csv", f"msprof_timeline/{EXPORT_JOB.name}"),
    (f"mindspore_cpu/lenet_graph/{CPU.name}/FRAMEWORK/cpu_op_execute_timestamp_0.txt", f"mindspore_cpu/lenet_graph/{CPU.name}"),
])
def test_a_single_file_that_does_not_stand_alone_names_the_folder_to_pass(tmp_path: Path, relative: str, folder: str):
    runner = CliRunner()
    done = runner.invoke(app, ["analyse", str(FIXTURES / relative), "-o", str(tmp_path / "out")])
    assert done.exit_code == 2
    assert "does not stand alone" in done.output and f"profpipe analyse {FIXTURES / folder}" in \
        done.output.replace("\n", "")
    assert not (tmp_path / "out").exists()


def test_realdata_tree_sources(tmp_path: Path):
    """The whole real-data tree: every source is read or has its own error; no rank is claimed twice in silence."""
    root = realdata("")
    sources = discover(root)
    assert all("--rank-map" in s.problem for s in sources if s.problem is not None)
    # the whole tree in one run: every source read gets a capture of its own rank, and no (rank, capture)
    # holds two sources of one family (two cycles of a format are two captures)
    result = run(root, tmp_path / "out")
    keys = query(result.output, "SELECT rank, capture, layout, count(*) FROM run_info GROUP BY ALL HAVING count(*) > 1")
    assert keys == []
    manifest = json.loads((result.output / "manifest.json").read_text())
    read = [s for s in manifest["sources"] if "superseded_by" not in s and s["rank"] >= 0]
    assert len({(s["rank"], s["family"], s["capture"]) for s in read}) == len(read)


def test_captures_are_numbered_by_time_not_by_file_name(tmp_path: Path):
    folder = tmp_path / "traces"
    folder.mkdir()
    trace = json.loads(KINETO_V2021.read_text())
    (folder / "worker0.2.pt.trace.json").write_text(json.dumps(trace))  # the earlier cycle, named second
    for event in trace["traceEvents"]:
        if "ts" in event:
            event["ts"] = event["ts"] + 3_600_000_000  # an hour later (ts in µs)
    (folder / "worker0.1.pt.trace.json").write_text(json.dumps(trace))
    out = run(folder, tmp_path / "out").output
    manifest = json.loads((out / "manifest.json").read_text())
    assert sorted((s["capture"], Path(s["files"][0]["path"]).name) for s in manifest["sources"]) == [
        (0, "worker0.2.pt.trace.json"), (1, "worker0.1.pt.trace.json")]
    first = query(out, "SELECT capture, min(start_ns) FROM host_op GROUP BY ALL ORDER BY 1")
    assert first[1][1] - first[0][1] == 3_600 * 10**9


def test_sources_on_clocks_that_cannot_be_compared_are_separate_captures_and_it_is_said(tmp_path: Path):
    """A MindSpore CPU dump and a raw Ascend job for rank 0: the dump is on the epoch, the job on its device
    counter; they cannot be ordered by time, so each is a capture and trace_health says why."""
    root = tmp_path / "in"
    shutil.copytree(CPU, root / "cpu")
    shutil.copytree(FIXTURES / "ascend_raw" / "era_a" / "JOB1", root / "JOB1")
    out = run(root, tmp_path / "out").output
    # the epoch-aligned source first, then the device-counter one
    assert sorted(query(out, "SELECT capture, clock FROM run_info")) == [(0, "unix_epoch"), (1, "device_syscnt")]
    rows = query(out, "SELECT check_name, action, message FROM trace_health WHERE check_name = 'ambiguous'")
    assert rows and rows[0][1] == "kept" and "cannot be compared" in rows[0][2]


def test_a_step_list_keeps_those_steps_of_every_capture(tmp_path: Path):
    """Steps are numbered per capture: step_list picks the step of each cycle by that cycle's own window (a
    window taken over both cycles would span from the first cycle's step to the second's)."""
    folder = tmp_path / "traces"
    folder.mkdir()
    shutil.copy(KINETO_V2021, folder / "worker0.1.pt.trace.json")
    later = json.loads(KINETO_V2021.read_text())
    for event in later["traceEvents"]:  # the second cycle one second later
        if isinstance(event.get("ts"), (int, float)):
            event["ts"] += 1_000_000
    (folder / "worker0.2.pt.trace.json").write_text(json.dumps(later))
    last = query(run(KINETO_V2021, tmp_path / "alone").output, "SELECT max(step) FROM step_phases")[0][0]
    alone = run(KINETO_V2021, tmp_path / "alone_last", step_list=[last]).output
    ops = query(alone, "SELECT count(*) FROM host_op")[0][0]
    assert 0 < ops < query(tmp_path / "alone", "SELECT count(*) FROM host_op")[0][0]

    out = run(folder, tmp_path / "out", step_list=[last]).output
    assert query(out, "SELECT capture, step FROM step_phases ORDER BY ALL") == [(0, last), (1, last)]
    assert query(out, "SELECT capture, count(*) FROM host_op GROUP BY ALL ORDER BY ALL") == [(0, ops), (1, ops)]
    with pytest.raises(ProfpipeError, match="rank 0 has steps .*; rank 0 capture 1 has steps"):
        run(folder, tmp_path / "out2", step_list=[last + 1])


# --- copies and rival sources of one rank (issue 33) ------------------------------------------------------

def _superseded_rows(out: Path) -> list[tuple]:
    return query(out, "SELECT check_name, action, source, message FROM trace_health ORDER BY ALL")


def test_a_copy_of_a_trace_under_another_name_is_superseded_not_counted_twice(tmp_path: Path):
    folder = tmp_path / "traces"
    folder.mkdir()
    shutil.copy(KINETO_RANK0, folder / "rank-0.pt.trace.json")
    shutil.copy(KINETO_RANK0, folder / "rank_0_copy.pt.trace.json")
    result = run(folder, tmp_path / "out")
    alone = run(KINETO_RANK0, tmp_path / "alone")
    assert result.exit_code == 0 and result.skipped == []
    assert _data_counts(result) == _data_counts(alone)
    assert query(result.output, "SELECT sum(calls) FROM host_op_stats") == \
        query(alone.output, "SELECT sum(calls) FROM host_op_stats")
    [(check, action, source, message)] = _superseded_rows(result.output)
    assert (check, action, source) == ("superseded", "superseded", str(folder / "rank_0_copy.pt.trace.json"))
    assert f"superseded by {folder / 'rank-0.pt.trace.json'}, of which it is a copy" in message
    assert f"{KINETO_RANK0.stat().st_size} bytes" in message


def test_a_mindspore_dump_copied_into_a_second_folder_is_read_once(tmp_path: Path):
    root = tmp_path / "in"
    _copy(CPU, root / "a" / CPU.name)
    _copy(CPU, root / "b" / CPU.name)
    result = run(root, tmp_path / "out")
    alone = run(CPU, tmp_path / "alone")
    assert result.exit_code == 0
    assert _data_counts(result) == _data_counts(alone)
    assert query(result.output, "SELECT rank, capture, source_dir FROM run_info") == [
        (0, 0, str(root / "a" / CPU.name / "FRAMEWORK"))]
    [(check, action, source, message)] = _superseded_rows(result.output)
    assert (check, action, source) == ("superseded", "superseded", str(root / "b" / CPU.name / "FRAMEWORK"))
    assert f"superseded by {root / 'a' / CPU.name / 'FRAMEWORK'}, of which it is a copy" in message


def _padded_trace(path: Path, padding: str) -> None:
    """The rank 0 trace with a long metadata string: a file larger than the ends the fingerprint hashes."""
    trace = json.loads(KINETO_RANK0.read_text())
    trace["padding"] = padding
    path.write_text(json.dumps(trace))


def test_a_large_trace_that_differs_only_in_its_middle_is_no_copy(tmp_path: Path):
    """Same size, same first and last MiB: the whole files are compared before a source is called a copy."""
    folder = tmp_path / "traces"
    folder.mkdir()
    padding = "x" * (3 << 20)
    _padded_trace(folder / "rank-0.pt.trace.json", padding)
    _padded_trace(folder / "rank_0_copy.pt.trace.json", padding)
    _padded_trace(folder / "rank_0_other.pt.trace.json", padding[: 3 << 19] + "y" + padding[(3 << 19) + 1:])
    sources = {s.files["trace"].name: s.superseded_by for s in discover(folder)}
    assert sources == {"rank-0.pt.trace.json": None, "rank_0_copy.pt.trace.json": folder / "rank-0.pt.trace.json",
                       "rank_0_other.pt.trace.json": None}


@settings(max_examples=15, deadline=None)
@given(names=st.lists(st.text("abcdefgh_-.0123456789", min_size=1, max_size=12), min_size=1, max_size=5,
                      unique_by=str.lower))
def test_any_number_of_copies_leaves_one_source_read(names: list[str]):
    """Property: n byte-equal copies of one rank's trace, under any names, leave one source read; the other n - 1
    are superseded by it."""
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for name in names:
            shutil.copy(KINETO_RANK0, folder / f"{name}.pt.trace.json")
        sources = discover(folder)
        read = [s for s in sources if s.superseded_by is None]
        assert len(sources) == len(names) and len(read) == 1
        assert all(s.superseded_by == read[0].files["trace"] for s in sources if s is not read[0])


def test_two_different_traces_of_one_rank_over_the_same_time_are_a_conflicting_entry(tmp_path: Path):
    """Not copies, yet both claim rank 0 over the same time (two cycles of a rank never overlap): both are read as
    two captures, as before, and trace_health says so instead of summing them in silence."""
    folder = tmp_path / "traces"
    folder.mkdir()
    shutil.copy(KINETO_RANK0, folder / "rank-0.pt.trace.json")
    other = json.loads(KINETO_RANK0.read_text())
    other["traceEvents"] = [e for e in other["traceEvents"] if e.get("cat") != "kernel"]
    (folder / "rank_0_other.pt.trace.json").write_text(json.dumps(other))
    result = run(folder, tmp_path / "out")
    assert result.exit_code == 0
    assert query(result.output, "SELECT capture, count(*) FROM run_info GROUP BY ALL ORDER BY ALL") == [(0, 1), (1, 1)]
    [(check, action, source, message)] = _superseded_rows(result.output)
    assert (check, action, source) == ("conflicting_entry", "kept", str(folder / "rank_0_other.pt.trace.json"))
    assert f"{folder / 'rank_0_other.pt.trace.json'} and {folder / 'rank-0.pt.trace.json'}" in message
    assert "both are read, the second as capture 1" in message and "--rank-map" in message
