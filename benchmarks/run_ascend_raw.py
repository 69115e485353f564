"""profpipe on a scaled raw Ascend job against the plain numpy decode of the same bytes, in one run.

The practical limit of any reader of these files is reading the bytes and decoding the record
columns it needs; `numpy_decode` does exactly that (np.fromfile + structured view + column copies
of the HWTS log and the training trace) and nothing else. profpipe's whole analysis (ingest,
models, reports, timeline) is measured beside it; both report wall time and peak RSS. The input
is read once before measuring (both then find it in the page cache), each command runs
`--repeat` times and the fastest run counts, because this machine is shared. For scale, the
"write floor" is the plain cost of writing as many bytes as profpipe's output folder holds.

Usage: python benchmarks/run_ascend_raw.py --mb 1024
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run_mindspore_cpu import WORK, measure  # noqa: E402
from scale_ascend_job import default_source, scale  # noqa: E402

_DECODE = """
import sys, numpy as np
from pathlib import Path
hwts = np.dtype([("head", "u1"), ("core", "u1"), ("u", "<u2"), ("block", "<u2"), ("task", "<u2"),
                 ("syscnt", "<u8"), ("stream", "<u4"), ("r", "V44")])
trace = np.dtype([("tag", "<u8"), ("task", "<u2"), ("stream", "<u2"), ("syscnt", "<u8")])
total = 0
for path in Path(sys.argv[1]).rglob("*"):
    dtype = hwts if path.name.startswith("hwts") else trace if path.name.startswith("training_trace") else None
    if dtype is None:
        continue
    records = np.fromfile(path, dtype=dtype)
    columns = [records[name].copy() for name in dtype.names if not name.startswith(("r", "u", "core"))]
    total += records.size
    del records, columns
print(total)
"""

_WRITE = """
import sys
block = bytes(1 << 20)
remaining = int(sys.argv[2])
with open(sys.argv[1], "wb") as out:
    while remaining > 0:
        remaining -= out.write(block[:min(remaining, len(block))])
"""


def fastest(command: list[str], args: argparse.Namespace) -> dict:
    """The run of `command` with the least wall time out of `args.repeat` (the first failure ends it)."""
    best: dict | None = None
    for _ in range(args.repeat):
        result = measure(command, args.timeout)
        if not result["ok"]:
            return result
        if best is None or result["wall_s"] < best["wall_s"]:
            best = result
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, nargs="+", default=[1024])
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--repeat", type=int, default=3, help="runs per command; the fastest counts")
    args = parser.parse_args()
    for size_mb in args.mb:
        folder = WORK / f"ascend_{int(size_mb)}mb" / "JOB"
        if not folder.exists():
            scale(default_source(), folder, size_mb)
        bytes_in = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        for path in folder.rglob("*"):  # warm the page cache for both commands
            if path.is_file():
                path.read_bytes()
        out = WORK / "out_ascend"
        baseline = fastest([sys.executable, "-c", _DECODE, str(folder)], args)
        ours = fastest([sys.executable, "-c", "from profpipe.cli import app; app()", "analyse", str(folder),
                        "-o", str(out)], args)
        row = {"input_mib": round(bytes_in / 2**20, 1), "numpy_decode": baseline, "profpipe": ours}
        if ours["ok"] and baseline["ok"]:
            bytes_out = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
            row["output_mib"] = round(bytes_out / 2**20, 1)
            row["write_floor"] = fastest([sys.executable, "-c", _WRITE, str(WORK / "write_floor.bin"),
                                          str(bytes_out)], args)
            (WORK / "write_floor.bin").unlink(missing_ok=True)
            row["wall_ratio"] = round(ours["wall_s"] / baseline["wall_s"], 2)
            row["peak_rss_over_input"] = round(ours["peak_rss_mib"] / (bytes_in / 2**20), 2)
            manifest = json.loads((out / "manifest.json").read_text())
            row["task_executions"] = manifest["row_counts"]["device_exec"]
            row["stage_s"] = {stage: round(seconds, 2) for stage, seconds in manifest["timings_s"].items()}
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
