"""The timeline's layout (profpipe/export/chrome_trace.py, timeline_tracks.py) against the Chrome trace format's
rules as Perfetto applies them: one process per rank, sorted by rank; one named thread per track; the complete
events of a track nest (a slice that partly overlaps another is moved to an "(overlapping)" track, never dropped);
each flow's start lies inside a slice of its track and its end where a slice of its track starts."""
from __future__ import annotations

import gzip
import json
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, query, run
from profpipe.export import timeline_tracks
from profpipe.export.timeline_tracks import MAX_LEVEL, place_slices


def _load(out: Path) -> dict:
    return json.loads((out / "timeline" / "trace.json").read_text(), parse_float=Decimal)


def assert_well_formed(trace: dict) -> None:
    """The format rules the timeline keeps (checked on the file alone)."""
    events = trace["traceEvents"]
    meta = defaultdict(dict)
    for e in events:
        if e["ph"] == "M":
            assert (e["pid"], e["tid"], e["name"]) not in meta, e
            meta[e["pid"], e["tid"], e["name"]] = e["args"]
    processes = {pid for pid, _, name in meta if name == "process_name"}
    slices = defaultdict(list)
    for e in events:
        assert e["pid"] in processes, e  # every event is in a named process
        if e["ph"] in ("X", "s", "f"):
            assert (e["pid"], e["tid"], "thread_name") in meta, e  # on a named thread
        if e["ph"] == "X":
            assert e["dur"] >= 0
            slices[e["pid"], e["tid"]].append((e["ts"], e["ts"] + e["dur"]))
    for track, spans in slices.items():  # the slices of a track nest: none starts inside another and ends after it
        open_ends: list[Decimal] = []
        for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            assert not open_ends or end <= open_ends[-1], (meta[track[0], track[1], "thread_name"], start, end)
            open_ends.append(end)
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts.keys() == ends.keys()
    for flow_id, s in starts.items():
        f = ends[flow_id]
        assert f["bp"] == "e" and s["cat"] == f["cat"] == "ac2g"
        assert any(a <= s["ts"] <= b for a, b in slices[s["pid"], s["tid"]]), s  # binds to its enclosing slice
        assert any(a == f["ts"] for a, _ in slices[f["pid"], f["tid"]]), f  # binds to the slice starting there
    # processes sorted by rank, tracks numbered in their sort order
    ranks = {pid: meta[pid, 0, "process_name"]["name"] for pid in processes if pid}
    order = sorted(ranks, key=lambda pid: meta[pid, 0, "process_sort_index"]["sort_index"])
    assert [int(ranks[pid].split()[1]) for pid in order] == sorted(int(ranks[pid].split()[1]) for pid in order)
    for (pid, tid, name), args in meta.items():
        if name == "thread_name":
            assert meta[pid, tid, "thread_sort_index"] == {"sort_index": tid}


@pytest.mark.parametrize("fixture", ["pytorch_cuda", "kineto/current", "kineto_nccl", "paddle", "nsys", "msprof_timeline",
                                     "ascend_ms_era_f", "ascend_ms_cluster", "mindspore_gpu", "mindspore_cpu",
                                     "minddata_sink", "host_info", "mindspore_stack", "ascend_memory", "ascend_pmu",
                                     "msprof_tx"])
def test_every_fixtures_timeline_keeps_the_format_rules(fixture: str, tmp_path: Path) -> None:
    trace = _load(run(FIXTURES / fixture, tmp_path / "out").output)
    assert_well_formed(trace)
    names = [e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"]
    assert names[0] == "profpipe" and all(n.startswith("rank ") for n in names[1:]), names


def test_one_process_per_rank_with_a_track_per_thread_and_stream(tmp_path: Path) -> None:
    """The two-rank NCCL fixture: processes "rank 0" and "rank 1"; in each, the step trace, one track per host
    thread (its ops and runtime calls) and one per stream; oracle: the raw traces' threads and streams."""
    trace = _load(run(FIXTURES / "kineto_nccl", tmp_path / "out").output)
    events = trace["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] in ("process_name", "thread_name")}
    processes = {pid: name for (pid, tid), name in names.items() if tid == 0 and pid}
    assert sorted(processes.values()) == ["rank 0", "rank 1"]
    for path in sorted((FIXTURES / "kineto_nccl").glob("*.json*")):
        raw = json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_text())
        rank = raw["distributedInfo"]["rank"]
        [pid] = [p for p, name in processes.items() if name == f"rank {rank}"]
        threads = {name for (p, tid), name in names.items() if p == pid and tid}
        raw_threads = {f"Host: Thread {e['tid']}" for e in raw["traceEvents"]
                       if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation", "cuda_runtime")}
        raw_streams = {f"GPU kernels: Stream {e['args']['stream']}" for e in raw["traceEvents"]
                       if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")}
        assert raw_threads | raw_streams | {"Step Trace: iterations"} <= threads
        assert not {t for t in threads if "(overlapping)" in t}


def test_partly_overlapping_slices_move_to_overlapping_tracks_and_keep_their_flows(tmp_path: Path) -> None:
    """Kernels on stream 7: a [10, 50), b [20, 30) inside it, c [40, 70) partly over a, d [45, 60) partly over a
    and inside c; on the host thread an annotation [0, 100) and a runtime call per kernel inside it, plus an
    annotation [95, 120) partly over the first. c and d go to "Stream 7 (overlapping)" (they nest there), the second
    annotation to "Thread 1 (overlapping)"; every event is written once and each flow follows its slice."""
    kernels = [("a", 10, 40), ("b", 20, 10), ("c", 40, 30), ("d", 45, 15)]
    events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
              {"ph": "X", "cat": "user_annotation", "name": "late", "pid": 1, "tid": 1, "ts": 95, "dur": 25}]
    for i, (name, ts, dur) in enumerate(kernels, start=1):
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": i,
                       "dur": 0.5, "args": {"correlation": i}})
        events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
                       "args": {"correlation": i, "stream": 7, "device": 0}})
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "rank-0.pt.trace.json").write_text(json.dumps({"traceEvents": events}))
    trace = _load(run(folder, tmp_path / "out").output)
    assert_well_formed(trace)
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    placed = {e["name"]: names[e["pid"], e["tid"]] for e in trace["traceEvents"] if e["ph"] == "X"
              and e["name"] in ("a", "b", "c", "d", "ProfilerStep#1", "late")}
    assert placed == {"a": "GPU kernels: Stream 7", "b": "GPU kernels: Stream 7",
                      "c": "GPU kernels: Stream 7 (overlapping)", "d": "GPU kernels: Stream 7 (overlapping)",
                      "ProfilerStep#1": "Host: Thread 1", "late": "Host: Thread 1 (overlapping)"}
    kernel_at = {e["ts"]: e["name"] for e in trace["traceEvents"] if e["ph"] == "X" and e["name"] in "abcd"}
    flow_ends = {kernel_at[e["ts"]]: names[e["pid"], e["tid"]] for e in trace["traceEvents"] if e["ph"] == "f"}
    assert flow_ends == {name: placed[name] for name in "abcd"}


_INTERVALS = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 60), st.integers(0, 40)), max_size=40)


def _greedy_levels(slices: list[tuple[int, int, int]]) -> dict[tuple[int, int, int], int]:
    """Oracle: in start order (longer first), each slice on the first level where it crosses no slice already
    there (a crossing: one starts inside the other and ends after it); MAX_LEVEL takes the rest."""
    levels: dict[int, list[tuple[int, int]]] = defaultdict(list)
    placed = {}
    for track, start, dur in sorted(slices, key=lambda s: (s[0], s[1], -s[2])):
        end = start + dur
        for level in range(MAX_LEVEL + 1):
            if level == MAX_LEVEL or not any(a <= start < b < end for a, b in levels[track, level]):
                levels[track, level].append((start, end))
                placed[track, start, dur] = level
                break
    return placed


@settings(max_examples=200, deadline=None)
@given(_INTERVALS)
def test_each_slice_goes_to_the_first_level_where_it_nests(slices: list[tuple[int, int, int]]) -> None:
    con = duckdb.connect()
    con.execute("CREATE TEMP TABLE timeline_selected (rank INTEGER, capture INTEGER, lane INTEGER, tid BIGINT, "
                "category VARCHAR, start_ns BIGINT, dur_ns BIGINT)")
    if slices:
        con.executemany("INSERT INTO timeline_selected VALUES (0, 0, 3, ?, 'kernel', ?, ?)", slices)
    place_slices(con)
    moved = {(tid, start, dur): level for tid, start, dur, level in
             con.execute("SELECT tid, start_ns, dur_ns, level FROM timeline_moved").fetchall()}
    expected = {key: level for key, level in _greedy_levels(slices).items() if level}
    assert moved == expected


@settings(max_examples=200, deadline=None)
@given(_INTERVALS, st.sampled_from([1, 2, 3, 7]))
def test_slices_read_in_batches_go_to_the_same_levels(slices: list[tuple[int, int, int]], batch_rows: int) -> None:
    """The same oracle with the slices read in small batches (the walk goes on from batch to batch); and each start
    time's flow level: that of its innermost slice (the shortest), where it is off the track."""
    con = duckdb.connect()
    con.execute("CREATE TEMP TABLE timeline_selected (rank INTEGER, capture INTEGER, lane INTEGER, tid BIGINT, "
                "category VARCHAR, start_ns BIGINT, dur_ns BIGINT)")
    if slices:
        con.executemany("INSERT INTO timeline_selected VALUES (0, 0, 3, ?, 'kernel', ?, ?)", slices)
    saved = timeline_tracks._BATCH_ROWS
    timeline_tracks._BATCH_ROWS = batch_rows
    try:
        place_slices(con)
    finally:
        timeline_tracks._BATCH_ROWS = saved
    levels = _greedy_levels(slices)
    moved = {(tid, start, dur): level for tid, start, dur, level in
             con.execute("SELECT tid, start_ns, dur_ns, level FROM timeline_moved").fetchall()}
    assert moved == {key: level for key, level in levels.items() if level}
    innermost = {}
    for track, start, dur in sorted(levels, key=lambda s: (s[0], s[1], -s[2])):
        innermost[track, start] = levels[track, start, dur]
    flows = dict(((tid, start), level) for tid, start, level in
                 con.execute("SELECT tid, start_ns, level FROM timeline_flow_level").fetchall())
    assert flows == {key: level for key, level in innermost.items() if level}


@pytest.mark.parametrize("limit_mb", [0.1, 0.2, 0.3])
def test_a_size_limit_keeps_the_rules_and_cuts_flow_arrows_whole(limit_mb: float, tmp_path: Path) -> None:
    """The real H100 trace cut at three sizes: the file fits the limit, is still well formed (every kept flow
    has both ends), is complete up to the cut and has no event after it but flow arrows' starts' partners."""
    out = run(FIXTURES / "pytorch_cuda", tmp_path / "out", timeline_limit_mb=limit_mb).output
    path = out / "timeline" / "trace.json"
    trace = _load(out)
    assert path.stat().st_size <= limit_mb * 1024 * 1024
    assert_well_formed(trace)
    truncated = trace["profpipe"]["truncated"]
    cut_us = Decimal(str(truncated["complete_until_us"]))
    timed = [e for e in trace["traceEvents"] if e["ph"] in ("X", "C", "s", "f") and e.get("cat") not in ("step", "step_phase")]
    assert timed and all(e["ts"] < cut_us for e in timed)
    full = _load(run(FIXTURES / "pytorch_cuda", tmp_path / "full").output)
    flows = defaultdict(dict)
    for e in full["traceEvents"]:
        if e["ph"] in ("s", "f"):
            flows[e["id"]][e["ph"]] = e["ts"]
    kept = {e["id"] for e in trace["traceEvents"] if e["ph"] == "s"}
    assert kept == {i for i, ends in flows.items() if ends["f"] < cut_us}
    def spans(events: list[dict], steps: bool) -> list[tuple]:
        return sorted((e["name"], e["ts"]) for e in events
                      if e["ph"] in ("X", "C") and (e.get("cat") in ("step", "step_phase")) == steps)

    assert spans(trace["traceEvents"], True) == spans(full["traceEvents"], True)  # every step is kept
    assert spans(trace["traceEvents"], False) == [s for s in spans(full["traceEvents"], False) if s[1] < cut_us]


def test_python_frames_are_a_flame_graph_on_their_host_thread(tmp_path: Path) -> None:
    """with_stack: every python_function event of the real H100 trace is a slice on its host thread's track (or that
    thread's "(overlapping)" track), at its own time; the ops run inside a frame nest under it."""
    path = FIXTURES / "pytorch_cuda" / "rank-0.pt.trace.json.gz"
    raw = json.loads(gzip.decompress(path.read_bytes()))
    frames = sorted((e["name"], e["tid"], Decimal(str(e["ts"]))) for e in raw["traceEvents"]
                    if e.get("cat") == "python_function")
    trace = _load(run(path.parent, tmp_path / "out").output)
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    base_us = Decimal(trace["baseTimeNanoseconds"] - raw["baseTimeNanoseconds"]) / 1000
    ours = sorted((e["name"], int(names[e["pid"], e["tid"]].split()[2]), e["ts"] + base_us)
                  for e in trace["traceEvents"] if e.get("cat") == "python_function")
    assert ours == frames and len(frames) > 1000


def test_host_info_events_and_memory_are_on_the_host_lanes(tmp_path: Path) -> None:
    """MindSpore's host info: every paired event (host_span, but orphan ends) is a slice on its thread's host track
    at its own time, and the resident-memory samples are a counter; oracle: the marts host_span and
    host_memory_curve (themselves checked against MindSpore's own files in test_host_info.py)."""
    out = run(FIXTURES / "host_info", tmp_path / "out").output
    trace = _load(out)
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    base = trace["baseTimeNanoseconds"]
    ours = sorted((e["pid"] - 1, int(names[e["pid"], e["tid"]].split()[2]), e["name"], base + int(e["ts"] * 1000),
                   int(e["dur"] * 1000)) for e in trace["traceEvents"] if e.get("cat") == "host_event")
    spans = query(out, "SELECT rank, tid, name || CASE kind WHEN 'open_start' THEN ' (no end)' ELSE '' END, start_ns, "
                       "coalesce(dur_ns, 0) FROM host_span WHERE kind <> 'orphan_end' ORDER BY ALL")
    assert ours == [tuple(row) for row in spans] and spans
    memory = sorted((e["pid"] - 1, base + int(e["ts"] * 1000), e["args"]["bytes"]) for e in trace["traceEvents"]
                    if e["ph"] == "C" and e["name"] == "Host memory (VmRSS)")
    assert memory == [tuple(r) for r in query(out, "SELECT rank, ts_ns, memory_bytes FROM host_memory_curve "
                                                   "WHERE ts_ns IS NOT NULL ORDER BY ALL")] and memory


def test_memory_bandwidth_counters_follow_the_copies(tmp_path: Path) -> None:
    """The memcpy / memset bandwidth of memory_bandwidth_series is a counter track per direction ("Memory bandwidth
    HtoD", ..., HTA's "Memcpy BW" counters), every change point a sample, on the H100 fixture; a trace with no copy
    (host_info) gets none."""
    out = run(FIXTURES / "pytorch_cuda", tmp_path / "out").output
    trace = _load(out)
    base = trace["baseTimeNanoseconds"]
    ours = sorted((e["name"], base + int(Decimal(str(e["ts"])) * 1000), e["args"]["bytes_per_second"])
                  for e in trace["traceEvents"] if e["ph"] == "C" and e["name"].startswith("Memory bandwidth "))
    expected = query(out, "SELECT 'Memory bandwidth ' || direction, ts_ns, bytes_per_second FROM memory_bandwidth_series "
                          "ORDER BY ALL")
    assert [(n, t) for n, t, _ in ours] == [(n, t) for n, t, _ in expected] and ours
    assert all(float(v) == pytest.approx(w, rel=1e-12) for (_, _, v), (_, _, w) in zip(ours, expected))
    assert {n for n, _, _ in ours} == {"Memory bandwidth HtoD", "Memory bandwidth DtoH", "Memory bandwidth memset"}
    bare = _load(run(FIXTURES / "host_info", tmp_path / "bare").output)
    assert not [e for e in bare["traceEvents"] if e["ph"] == "C" and e["name"].startswith("Memory bandwidth")]


# ---- what the timeline holds by default, and where it is written --------------------------------------------------

def _thread_names(trace: dict) -> set[str]:
    return {e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}


def _summary_timeline(out: Path) -> dict | None:
    return json.loads((out / "reports" / "summary.json").read_text())["timeline"]


def test_one_ranks_kineto_trace_gets_the_summary_timeline_by_default_and_the_full_one_on_request(tmp_path: Path) -> None:
    """The input is itself a Chrome trace, so by default profpipe writes only what it adds (steps, phases, overlap);
    `--timeline full` writes every lane, of which the summary's events are a part."""
    trace_file = FIXTURES / "kineto" / "current" / "rank-0.pt.trace.json"
    summary = run(trace_file, tmp_path / "auto", timeline="auto").output
    full = run(trace_file, tmp_path / "full", timeline="full").output
    assert _summary_timeline(summary)["content"] == "summary" and _summary_timeline(full)["content"] == "full"
    short, whole = _load(summary), _load(full)
    assert_well_formed(short)
    lanes = {name.split(":")[0] for name in _thread_names(short)}
    assert lanes and lanes <= {"Step Trace", "Overlap Analysis"}, lanes
    assert any(name.startswith("GPU kernels") for name in _thread_names(whole))
    def spans(trace: dict) -> set[str]:  # track numbers differ: the full timeline has more tracks
        return {json.dumps({**e, "tid": None}, sort_keys=True, default=str) for e in trace["traceEvents"] if e["ph"] == "X"}

    assert spans(short) and spans(short) <= spans(whole)


def test_two_ranks_of_kineto_get_the_full_timeline_by_default(tmp_path: Path) -> None:
    out = run(FIXTURES / "kineto" / "current", tmp_path / "out", timeline="auto").output
    assert _summary_timeline(out)["content"] == "full"
    assert any(name.startswith("GPU kernels") for name in _thread_names(_load(out)))


def test_no_timeline_on_request(tmp_path: Path) -> None:
    out = run(FIXTURES / "kineto" / "current", tmp_path / "out", timeline="none", visual_report=True).output
    assert not (out / "timeline").exists() and _summary_timeline(out) is None
    assert "No timeline was written for this run" in (out / "report.html").read_text()


def test_a_compressed_timeline_holds_the_same_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from profpipe.export import chrome_trace

    plain = run(FIXTURES / "kineto_nccl", tmp_path / "plain").output
    monkeypatch.setattr(chrome_trace, "GZIP_TIMELINE_FROM_MB", 0.001)  # about 1 KB: past it, compressed by default
    packed = run(FIXTURES / "kineto_nccl", tmp_path / "packed", timeline_gzip=None).output
    assert not (packed / "timeline" / "trace.json").exists()
    assert _summary_timeline(packed)["path"] == "timeline/trace.json.gz"
    assert _summary_timeline(packed)["bytes"] == (packed / "timeline" / "trace.json.gz").stat().st_size
    unpacked = json.loads(gzip.decompress((packed / "timeline" / "trace.json.gz").read_bytes()))
    expected = json.loads((plain / "timeline" / "trace.json").read_text())
    assert {k: v for k, v in unpacked.items() if k != "traceEvents"} == {k: v for k, v in expected.items() if k != "traceEvents"}
    assert sorted(map(json.dumps, unpacked["traceEvents"])) == sorted(map(json.dumps, expected["traceEvents"]))
