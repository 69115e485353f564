"""Peak memory of reading a large msprof op_summary CSV (issue 16: every read has a bound in memory).

Copies fixtures/msprof_timeline to a scratch folder, repeats the rows of its op_summary_0_1_1.csv (each
copy with its own task ids and times) until the file reaches --mb MiB, then reads every source of the
folder in a child process (discover + the readers, as `profpipe analyse` does before writing) and prints
the rows read, the wall time and the child's peak RSS. PYTHONPATH picks the profpipe checkout measured.

Usage: PYTHONPATH=. python benchmarks/run_op_summary_memory.py --mb 300 [--keep DIR]
"""
from __future__ import annotations

import argparse
import csv
import io
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "msprof_timeline"

_READ = """
import sys, time
from pathlib import Path
from profpipe import ingest
from profpipe.discover import discover
from profpipe.health import HealthLedger
start, ledger, rows = time.time(), HealthLedger(), {}
for source in discover(Path(sys.argv[1]), warn=ledger.for_source("-", -1)):
    for name, table in ingest.read(source, ledger.for_source(str(source.directory), source.rank)):
        rows[name] = rows.get(name, 0) + table.num_rows
print(rows, f"{time.time() - start:.1f} s")
"""


def scale(dest: Path, target_mb: float) -> Path:
    """Write the scaled copy of the fixture into `dest`; return the op_summary path."""
    shutil.copytree(FIXTURE, dest)
    target = next(dest.glob("PROF_*/device_0/summary/op_summary_0_1_1.csv"))
    header, *rows = list(csv.reader(io.StringIO(target.read_text())))
    task, start = header.index("Task ID"), header.index("Task Start Time(us)")
    with open(target, "w", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(header)
        copy = 0
        while out.tell() < target_mb * 2**20:
            for row in rows:
                row = list(row)
                row[task] = str(int(row[task]) + 1000 * copy)
                row[start] = f"{float(row[start]) + 10_000 * copy:.3f}"
                writer.writerow(row)
            copy += 1
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=300.0, help="size of the op_summary CSV in MiB")
    parser.add_argument("--keep", type=Path, help="write the scaled folder here and keep it")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="op-summary-")) / "in"
    try:
        target = scale(folder, args.mb)
        print(f"{target}: {target.stat().st_size / 2**20:.1f} MiB")
        subprocess.run([sys.executable, "-c", _READ, str(folder)], check=True)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"peak RSS of the reading process: {peak:.0f} MiB")
    finally:
        if args.keep is None:
            shutil.rmtree(folder.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
