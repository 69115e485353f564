"""Time and peak memory of issue 21's CSV readers against the plain parse of the same file, in one run.

Each case copies a fixture to a scratch folder and repeats the data rows of one CSV (each copy shifted in time
by a whole period, so no row repeats another) until the file reaches --mb MiB:

* kernel_details: era F `kernel_details.csv` with AI Core PMU columns (fixtures/ascend_pmu): device_exec and
  the long device_exec_metric table (msprof_pmu);
* operator_memory: MindSpore 2.5+ `operator_memory.csv` (fixtures/ascend_memory/v2_5): memory_block;
* host_info: MindSpore's `host_info_<rank>.csv` (fixtures/host_info): host_info tables.

Then, each in a child process of its own, it reads the folder as `profpipe analyse` does before writing (discover +
the readers) and, as the limit, parses the same CSV with polars (every column as text, no types: the least any
reader must do). It prints rows, wall seconds and the child's peak RSS for both. PYTHONPATH picks the checkout.

Usage: PYTHONPATH=. python benchmarks/run_issue21_readers.py --mb 30 [--keep DIR] [--cases operator_memory ...]
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import shutil
import subprocess
import sys
import tempfile
from decimal import Decimal
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
#: case -> (fixture folder, the CSV inside it to scale, its time columns shifted per copy (µs), period µs)
CASES = {
    "kernel_details": ("ascend_pmu", "node0_*/ASCEND_PROFILER_OUTPUT/kernel_details.csv", ["Start Time(us)"], 1_000_000),
    "operator_memory": ("ascend_memory/v2_5", "*/ASCEND_PROFILER_OUTPUT/operator_memory.csv",
                        ["Allocation Time(us)", "Release Time(us)"], 1_000_000),
    "host_info": ("host_info", "profiler/host_info/host_info_0.csv", ["time_stamp(us)"], 1_000_000),
}

_MEASURE = """
import json, resource, sys, time
from pathlib import Path
start = time.perf_counter()
if sys.argv[1] == "profpipe":
    from profpipe import ingest
    from profpipe.discover import discover
    from profpipe.health import HealthLedger
    ledger, rows = HealthLedger(), {}
    for source in discover(Path(sys.argv[2]), warn=ledger.for_source("-", -1)):
        for name, table in ingest.read(source, ledger.for_source(str(source.directory), source.rank)):
            rows[name] = rows.get(name, 0) + table.num_rows
else:
    import polars as pl
    rows = {"csv": pl.read_csv(sys.argv[2], infer_schema=False).height}
print(json.dumps({"rows": rows, "s": time.perf_counter() - start,
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def scale(case: str, scratch: Path, target_mb: float) -> tuple[Path, Path]:
    """The scaled copy of the case's fixture: (its folder, the CSV)."""
    fixture, pattern, shifted, period = CASES[case]
    folder = scratch / case
    shutil.copytree(FIXTURES / fixture, folder)
    target = next(folder.glob(pattern))
    header, *rows = list(csv.reader(io.StringIO(target.read_text())))
    columns = [header.index(c) for c in shifted]
    with open(target, "w", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(header)
        copy = 0
        while out.tell() < target_mb * 2**20:
            for row in rows:
                row = list(row)
                for c in columns:
                    if row[c] not in ("", "N/A"):
                        row[c] = str(Decimal(row[c]) + period * copy)
                writer.writerow(row)
            copy += 1
    return folder, target


def measure(kind: str, path: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", _MEASURE, kind, str(path)], check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=30.0, help="size of each scaled CSV in MiB")
    parser.add_argument("--keep", type=Path, help="write the scaled inputs here and keep them")
    parser.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES), help="run only these cases")
    args = parser.parse_args()
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="profpipe-bench21-"))
    try:
        print(f"{'case':<16} {'MiB':>6} {'reader s':>9} {'reader MiB':>11} {'parse s':>8} {'parse MiB':>10}  rows")
        for case in args.cases:
            folder, target = scale(case, scratch, args.mb)
            ours, limit = measure("profpipe", folder), measure("polars", target)
            print(f"{case:<16} {target.stat().st_size / 2**20:6.1f} {ours['s']:9.2f} {ours['peak_mib']:11.0f} "
                  f"{limit['s']:8.2f} {limit['peak_mib']:10.0f}  {ours['rows']} / {limit['rows']['csv']}")
    finally:
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
