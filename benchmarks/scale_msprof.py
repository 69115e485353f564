"""Scale an msprof era-D timeline export to N ranks of about a target size each.

The source device (the real MindInsight sample's device_0 when ../shared/realdata has it, else
the generated fixtures/msprof_timeline) is repeated iteration by iteration: copy k of an
iteration file is shifted in time by k spans of the whole export and renumbered, so each rank
is a longer run of the same model. Ranks 1..N-1 are the same bytes under their own device id.

Usage: python benchmarks/scale_msprof.py OUT_DIR --ranks 8 --mb 200
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
REAL = (HERE.parents[1] / "shared" / "realdata" / "mindinsight" / "tests" / "utils" / "resource" / "profiler"
        / "PROF_000001_20230818142704322_COJGGGCANRMICFBC" / "device_0")
FIXTURE = next((HERE.parent / "fixtures" / "msprof_timeline").glob("PROF_*/device_0"))
_NAME = re.compile(r"msprof_(\d+)_(\d+)_(\d+)\.json")


def default_source() -> Path:
    return REAL if REAL.is_dir() else FIXTURE


def _shift(events: list[dict], shift_us: float, iteration_offset: int) -> str:
    for event in events:
        if "ts" in event:
            event["ts"] = round(float(event["ts"]) + shift_us, 3)
        args = event.get("args") or {}
        for key in ("FP Start", "BP End", "Iteration End"):
            if isinstance(args.get(key), (int, float)):
                args[key] = round(args[key] + shift_us, 3)
        if "Iteration ID" in args:
            args["Iteration ID"] += iteration_offset
            event["name"] = re.sub(r"\d+(_\d+)?$", lambda m: str(int(m.group(0).split("_")[0]) + iteration_offset)
                                   + (m.group(1) or ""), event["name"]) if event.get("cat") else event["name"]
    return json.dumps(events)


def scale(source: Path, target: Path, ranks: int, size_mb: float) -> None:
    """Write `ranks` device folders under `target`, each about `size_mb` MiB of msprof timelines."""
    files = sorted(source.glob("timeline/msprof_*.json"), key=lambda p: int(_NAME.fullmatch(p.name).group(3)))
    originals = [json.loads(p.read_text()) for p in files]
    starts = [float(e["ts"]) for events in originals for e in events if "ts" in e]
    span = max(starts) - min(starts) + 1000.0
    copies = max(1, round(size_mb * 2**20 / sum(p.stat().st_size for p in files)))
    model = int(_NAME.fullmatch(files[0].name).group(2))
    first = target / "PROF_000001_BENCH" / "device_0"
    (first / "timeline").mkdir(parents=True, exist_ok=True)
    device_id = source.name.split("_")[1]
    for name in ("start_info", "end_info", "info.json"):
        if (source / f"{name}.{device_id}").is_file():
            shutil.copy(source / f"{name}.{device_id}", first / f"{name}.0")
    for copy in range(copies):
        for index, path in enumerate(files):
            iteration = copy * len(files) + index + 1
            events = json.loads(json.dumps(originals[index]))
            text = _shift(events, copy * span, copy * len(files))
            (first / "timeline" / f"msprof_0_{model}_{iteration}.json").write_text(text)
    for rank in range(1, ranks):
        device = target / f"PROF_00000{rank + 1}_BENCH" / f"device_{rank}"
        (device / "timeline").mkdir(parents=True, exist_ok=True)
        for path in (first / "timeline").iterdir():
            (device / "timeline" / path.name.replace("msprof_0_", f"msprof_{rank}_", 1)).write_bytes(path.read_bytes())
        for info in first.glob("*.0"):
            content = json.loads(info.read_text())
            if "rank_id" in content:
                content["rank_id"] = rank
            (device / f"{info.name[:-2]}.{rank}").write_text(json.dumps(content))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--mb", type=float, default=200)
    args = parser.parse_args()
    scale(default_source(), args.out, args.ranks, args.mb)


if __name__ == "__main__":
    main()
