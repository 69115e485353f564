"""Scale a raw Ascend era-A job (the real JOB3 when ../shared/realdata has it) to a target size.

The HWTS log and the training trace are repeated back to back, each copy shifted in time by
the span of the original, so the scaled job is a longer run of the same graph: every op
executes once per copy and every step repeats. Framework files are copied unchanged.

Usage: python benchmarks/scale_ascend_job.py OUT_DIR --mb 1024
"""
from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REALDATA_JOB3 = HERE.parents[1] / "shared" / "realdata" / "mindinsight" / "tests" / "utils" / "resource" / "JOB3"
FIXTURE_JOB = HERE.parent / "fixtures" / "ascend_raw" / "era_a" / "JOB1"

_TIMED = {"hwts.log.data.45.dev": (64, 8), "training_trace.46.dev": (20, 12)}  # record size, syscnt offset


def default_source() -> Path:
    return REALDATA_JOB3 if REALDATA_JOB3.is_dir() else FIXTURE_JOB


def scale(source: Path, target: Path, size_mb: float) -> None:
    """Write a copy of the job `source` into `target` whose timed record files total about `size_mb` MiB."""
    timed = [p for p in source.rglob("*") if p.is_file() and any(p.name.startswith(k) for k in _TIMED)]
    original = sum(p.stat().st_size for p in timed)
    copies = max(1, round(size_mb * 2**20 / original))
    span = 0
    for path in timed:  # one shift for every file keeps the clocks of hwts and trace aligned
        size, at = next(v for k, v in _TIMED.items() if path.name.startswith(k))
        records = np.fromfile(path, dtype=np.uint8).reshape(-1, size)
        ticks = records[:, at:at + 8].copy().view("<u8").ravel()
        span = max(span, int(ticks.max()) - int(ticks.min()) + 1000)
    for path in source.rglob("*"):
        destination = target / path.relative_to(source)
        if path.is_dir():
            destination.mkdir(parents=True, exist_ok=True)
            continue
        destination.parent.mkdir(parents=True, exist_ok=True)
        if path not in timed:
            shutil.copyfile(path, destination)
            continue
        size, at = next(v for k, v in _TIMED.items() if path.name.startswith(k))
        records = np.fromfile(path, dtype=np.uint8).reshape(-1, size)
        ticks = records[:, at:at + 8].copy().view("<u8").ravel()
        with open(destination, "wb") as out:
            for copy in range(copies):
                shifted = records.copy()
                shifted[:, at:at + 8] = (ticks + np.uint64(copy * span)).view(np.uint8).reshape(-1, 8)
                out.write(shifted.tobytes())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--mb", type=float, default=1024)
    args = parser.parse_args()
    scale(default_source(), args.out, args.mb)
