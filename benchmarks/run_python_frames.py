"""profpipe on a Kineto trace with a million Python frames (issue 21) against HolisticTraceAnalysis' call graph and the
typed parse limit, side by side in one run, with the frames' figures checked against the generator's ground truth.

The input is scale_python_frames.py's trace of `--frames` python_function events (a GPT-like training loop with
with_stack=True: three Python threads, nesting 1-40 deep, frames around aten ops that launch CUDA kernels,
ProfilerStep#N spans), made once under benchmarks/work/pyframes_<frames>/ with its ground truth beside it. These
commands run as subprocesses on it, each measured for wall time and peak RSS (run_mindspore_cpu.measure),
`--repeat` times (the fastest counts):

* HTA (`--hta-python`, left out with `--skip-hta`): `TraceAnalysis(trace_dir=...)` with the `Python id` and `Python
  parent id` args added to its parser config (its JSON backend keeps python_function events), then
  `hta.common.call_stack.CallGraph` for the rank: the call graph HTA's critical-path analysis builds, every event
  of a thread nested by time (HTA 0.5's newer `hta.common.trace_call_graph.CallGraph` stops with "Unexpected
  case" on flow events of host threads, already on the real trace of fixtures/pytorch_cuda). Its wall is the
  process's, less the untimed export after the call graph (each frame's nearest python_function ancestor in the
  graph, its ids, name, thread and duration, for the checks below: the script reports how long that took);
* the typed parse limit: run_kineto.py's msgspec parse of the whole trace into typed Structs;
* `profpipe analyse` (its stage times and per-stage peaks from the output's manifest.json).

Checks (printed with the figures): profpipe's python_frame rows against the ground truth's frame count (and HTA's
python_function rows); every path of profpipe's python_call_tree (calls, total and self ns, host ops, device ns)
against the ground truth's, exactly; and for the `--top` paths by total and by self time, the ground truth's
figures beside HTA's (paths called more than once; from its call graph: its parents are by nesting time floored to µs, not by the frames' own
parent ids, so they differ where frames overlap ProfilerStep spans or µs rounding reorders them; the share of
frames whose HTA ancestor is their Python parent id is given).

Usage:
    python benchmarks/run_python_frames.py --hta-python /tmp/hta/bin/python [--frames 1000000] [--repeat 2]
    python benchmarks/run_python_frames.py --skip-hta --frames 1000000
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import duckdb
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run_ascend_raw import fastest  # noqa: E402
from run_kineto import _TYPED_PARSE, peak, ratio, wall  # noqa: E402
from run_mindspore_cpu import WORK  # noqa: E402
from scale_python_frames import generate  # noqa: E402

_HTA = """
import json, sys, time
started = time.perf_counter()
import numpy as np
from hta.common.call_stack import CallGraph
from hta.configs.default_values import AttributeSpec, ValueType, YamlVersion
from hta.configs.parser_config import ParserConfig
from hta.trace_analysis import TraceAnalysis

config = ParserConfig.get_default_cfg()
config.set_skip_event_types(set())
config.add_args([AttributeSpec(key, arg, ValueType.Int, -1, YamlVersion(1, 0, 0))
                 for key, arg in (("python_id", "Python id"), ("python_parent_id", "Python parent id"))])
ParserConfig.set_default_cfg(config)
analyzer = TraceAnalysis(trace_dir=sys.argv[1], include_last_profiler_step=True)
parsed = time.perf_counter()
rank = analyzer.t.get_ranks()[0]
CallGraph(analyzer.t, ranks=[rank])
built = time.perf_counter()

df = analyzer.t.get_trace(rank)
size = int(df["index"].max()) + 1
parent = np.full(size, -1, np.int64)
parent[df["index"].to_numpy()] = df["parent"].fillna(-1).to_numpy(np.int64)
frames = df[df["cat"] == analyzer.t.symbol_table.sym_index["python_function"]]
rows = frames["index"].to_numpy()
is_frame = np.zeros(size, bool)
is_frame[rows] = True
python_id = np.full(size, -1, np.int64)
python_id[rows] = frames["python_id"].to_numpy(np.int64)
ancestor = parent[rows]
while True:  # up the graph to the nearest python_function (HTA also nests frames in ops and annotations)
    climbing = (ancestor >= 0) & ~is_frame[np.maximum(ancestor, 0)]
    if not climbing.any():
        break
    ancestor[climbing] = parent[ancestor[climbing]]
names = analyzer.t.symbol_table.get_sym_table()
np.savez(sys.argv[2], python_id=python_id[rows], python_parent_id=frames["python_parent_id"].to_numpy(np.int64),
         ancestor_id=np.where(ancestor >= 0, python_id[np.maximum(ancestor, 0)], -1), tid=frames["tid"].to_numpy(np.int64),
         dur_us=frames["dur"].to_numpy(np.int64), name=np.array([names[i] for i in frames["name"].to_numpy()]))
json.dump({"parse_s": parsed - started, "call_graph_s": built - parsed, "export_s": time.perf_counter() - built},
          open(sys.argv[3], "w"))
"""

#: profpipe's figures per call path of a thread, as the ground truth lists them.
_CALL_TREE_SQL = "SELECT tid, call_path, calls, total_ns, self_ns, self_ops, device_self_ns FROM python_call_tree"


def hta_paths(frames: dict[str, np.ndarray]) -> dict[tuple[int, str], tuple[int, int, int]]:
    """Calls, total and self µs per call path of a thread in HTA's call graph: each frame under its nearest
    python_function ancestor, self time its duration less its children's."""
    ids, ancestors = frames["python_id"], frames["ancestor_id"]
    order = np.argsort(ids)
    position = np.searchsorted(ids[order], ancestors)
    parent = np.where(ancestors >= 0, order[np.minimum(position, len(ids) - 1)], -1)
    depth = np.zeros(len(ids), np.int64)
    climbing = parent.copy()
    while (climbing >= 0).any():
        depth += climbing >= 0
        climbing = np.where(climbing >= 0, parent[np.maximum(climbing, 0)], -1)
    child_us = np.zeros(len(ids), np.int64)
    np.add.at(child_us, parent[parent >= 0], frames["dur_us"][parent >= 0])
    interned: dict[tuple[int, int, str], int] = {}
    labels: list[tuple[int, int, str]] = []  # path -> (tid, parent path, name)
    path_of = np.zeros(len(ids), np.int64)
    names, tids = frames["name"].tolist(), frames["tid"].tolist()
    for i in np.argsort(depth, kind="stable").tolist():
        key = (tids[i], int(path_of[parent[i]]) if parent[i] >= 0 else -1, names[i])
        path = interned.get(key)
        if path is None:
            path = interned[key] = len(labels)
            labels.append(key)
        path_of[i] = path
    calls = np.bincount(path_of, minlength=len(labels))
    total = np.bincount(path_of, weights=frames["dur_us"], minlength=len(labels))
    own = np.bincount(path_of, weights=frames["dur_us"] - child_us, minlength=len(labels))
    text: list[str] = []
    for tid, above, name in labels:  # a path's parent path comes first
        text.append(name if above < 0 else f"{text[above]};{name}")
    return {(labels[p][0], text[p]): (int(calls[p]), int(total[p]), int(own[p])) for p in range(len(labels))}


def check(out: Path, truth: dict) -> dict:
    """profpipe's python_frame count and python_call_tree rows against the ground truth."""
    with duckdb.connect(str(out / "profile.duckdb"), read_only=True) as con:
        con.execute("SET file_search_path = ?", [str(out)])
        frames = con.execute("SELECT count(*) FROM python_frame").fetchall()[0][0]
        ours = {(tid, path): tuple(int(x) for x in rest) for tid, path, *rest in con.execute(_CALL_TREE_SQL).fetchall()}
    expected = {(tid, path): tuple(rest) for tid, path, *rest in truth["paths"]}
    differing = [key for key in set(ours) | set(expected) if ours.get(key) != expected.get(key)]
    return {"python_frame_rows": frames, "truth_frames": truth["frames"], "call_tree_paths": len(ours),
            "truth_paths": len(expected), "paths_differing": len(differing), "example_difference":
            [str(differing[0]), ours.get(differing[0]), expected.get(differing[0])] if differing else None}


def top_paths(truth: dict, hta: dict | None, count: int) -> list[dict]:
    """Of the paths called more than once (the frames open for the whole trace left out), the `count` with the most
    total time and the `count` with the most self time (ground truth), with HTA's figures for the same path where
    its call graph has it."""
    paths = [p for p in truth["paths"] if p[2] > 1]
    chosen = sorted(paths, key=lambda p: -p[3])[:count] + sorted(paths, key=lambda p: -p[4])[:count]
    rows, seen = [], set()
    for tid, path, calls, total_ns, self_ns, *_ in chosen:
        if (tid, path) in seen:
            continue
        seen.add((tid, path))
        theirs = (hta or {}).get((tid, path))
        rows.append({"tid": tid, "depth": path.count(";"), "frame": path.rsplit(";", 1)[-1], "calls": calls,
                     "total_ms": round(total_ns / 1e6, 3), "self_ms": round(self_ns / 1e6, 3),
                     "hta": None if theirs is None else {"calls": theirs[0], "total_ms": round(theirs[1] / 1e3, 3),
                                                         "self_ms": round(theirs[2] / 1e3, 3)}})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hta-python", help="a Python with HolisticTraceAnalysis (unless --skip-hta)")
    parser.add_argument("--skip-hta", action="store_true")
    parser.add_argument("--frames", type=int, default=1_000_000, help="python_function events of the trace")
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--top", type=int, default=5, help="paths shown by total and by self time")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--repeat", type=int, default=1, help="runs per command; the fastest counts")
    args = parser.parse_args()
    if not args.skip_hta and not args.hta_python:
        parser.error("--hta-python is required unless --skip-hta")
    folder = WORK / f"pyframes_{args.frames}"
    trace = folder / "rank-0.pt.trace.json"
    truth_path = Path(f"{trace}.truth.json")
    if not truth_path.exists() or not trace.exists():
        generate(trace, args.frames, args.seed)
    truth = json.loads(truth_path.read_text())
    trace.read_bytes()  # in the page cache for every command
    out, exported, timings = WORK / "out_pyframes", WORK / "pyframes_hta.npz", WORK / "pyframes_hta_s.json"
    hta = None if args.skip_hta else fastest([args.hta_python, "-c", _HTA, str(folder), str(exported), str(timings)],
                                             args)
    if hta and hta["ok"]:  # the untimed export after the call graph is not HTA's work
        hta["stages_s"] = {k: round(v, 2) for k, v in json.loads(timings.read_text()).items()}
        hta["wall_s"] = round(hta["wall_s"] - hta["stages_s"]["export_s"], 2)
    typed = fastest([sys.executable, "-c", _TYPED_PARSE, str(trace)], args)
    ours = fastest([sys.executable, "-c", "from profpipe.cli import app; app()", "analyse", str(folder), "-o",
                    str(out)], args)
    row: dict = {"input_mib": round(trace.stat().st_size / 2**20, 1), "events": truth["events"],
                 "frames": truth["frames"], "frames_by_tid": truth["frames_by_tid"], "max_depth": truth["max_depth"],
                 "hta": hta or "skipped", "typed_parse": typed, "profpipe": ours}
    if ours["ok"]:
        manifest = json.loads((out / "manifest.json").read_text())
        row["stage_s"] = {k: round(v, 2) for k, v in manifest["timings_s"].items()}
        row["stage_peak_mib"] = {k: round(v / 2**20) for k, v in manifest["peak_rss_bytes"].items()}
        row["check"] = check(out, truth)
    row["speedup_vs_hta"] = ratio(wall(hta), wall(ours))
    row["memory_vs_hta"] = ratio(peak(ours), peak(hta))
    row["wall_vs_typed_parse"] = ratio(wall(ours), wall(typed))
    row["ingest_vs_typed_parse"] = ratio(row.get("stage_s", {}).get("ingest"), wall(typed))
    theirs = None
    if hta and hta["ok"]:
        frames = dict(np.load(exported))
        theirs = hta_paths(frames)
        row["hta_frames"] = len(frames["python_id"])
        row["hta_ancestor_is_python_parent"] = round(float(np.mean(frames["ancestor_id"] ==
                                                                    frames["python_parent_id"])), 4)
    row["top_paths"] = top_paths(truth, theirs, args.top)
    print(json.dumps(row, indent=1))


if __name__ == "__main__":
    main()
