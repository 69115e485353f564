"""Time and peak memory of the raw msproftx reader (profpipe/ingest/msproftx_raw.py) against a plain numpy read of
the same file, in one run.

It writes `--markers` raw msproftx records (256 bytes each: fixtures/generators/msprof_tx.py's writer; a thousand
start/end ranges on eight threads, copied with every copy shifted in time so no record repeats another) into a
scratch PROF folder's host/data, then, each in a child process of its own, reads them with profpipe's reader (the
records to host_op rows: checks, texts, host-counter conversion) and, as the floor, with `numpy.fromfile` of the
record dtype (no check, no text). It prints rows, wall seconds and the child's peak RSS for both, and the ratios.
PYTHONPATH picks the checkout, so an older commit can be measured on the same file.

Usage: PYTHONPATH=. python benchmarks/run_msproftx_raw.py --markers 1000000 [--keep DIR]
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fixtures" / "generators"))
import msprof_tx  # noqa: E402  (the record writer)

#: The fields a copy shifts: the header's timestamp and the stamp's start and end (byte offsets 16, 64, 72).
_SHIFTED = np.dtype([("head", "V16"), ("timestamp", "<u8"), ("info", "V40"), ("start", "<u8"), ("end", "<u8"),
                     ("rest", "V176")])
_MEASURE = """
import json, resource, sys, time
from pathlib import Path
path = Path(sys.argv[2])
start = time.perf_counter()
if sys.argv[1] == "profpipe":
    from profpipe.clocks import msprof_host_counter
    from profpipe.ingest import msproftx_raw
    rows = msproftx_raw.read([[path]], [], msprof_host_counter(path.parent.parent), lambda *a, **k: None).height
else:
    import numpy as np
    from profpipe.ingest.msproftx_raw import RECORD
    rows = len(np.fromfile(path, dtype=RECORD))
print(json.dumps({"rows": rows, "s": time.perf_counter() - start,
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def write(prof: Path, markers: int) -> Path:
    """`markers` records (a multiple of 1,000) in prof/host/data, with the host clock files; the slice's path."""
    base = msprof_tx.mono_ticks(5_000_000_000)
    block = np.frombuffer(b"".join(
        msprof_tx.tx_record(16000 + i % 8, "start/end", f"range {i % 50}".encode(), base + i * 2000, base + i * 2000 + 900)
        for i in range(1000)), dtype=_SHIFTED)
    data = prof / "host" / "data"
    data.mkdir(parents=True)
    path = data / "unaging.additional.msproftx.slice_0"
    with open(path, "wb") as out:
        for copy in range(markers // 1000):
            shifted = block.copy()
            for field in ("timestamp", "start", "end"):
                shifted[field] += copy * 2_000_000
            out.write(shifted.tobytes())
    (prof / "host" / "info.json").write_text(json.dumps({"CPU": [{"Frequency": f"{msprof_tx.HOST_MHZ}.000000"}]}))
    (prof / "host" / "host_start.log").write_text(
        f"[Host]\nclock_monotonic_raw: {msprof_tx.MONO_NS}\ncntvct: {msprof_tx.CNTVCT}\n")
    return path


def measure(kind: str, path: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", _MEASURE, kind, str(path)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markers", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, help="write the PROF folder here and keep it")
    args = parser.parse_args()
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="profpipe-tx-"))
    try:
        path = write(scratch / "PROF_000001_BENCH", args.markers)
        mib = path.stat().st_size / 2**20
        ours, floor = measure("profpipe", path), measure("numpy", path)
        print("| markers | MiB | profpipe s | profpipe peak MiB | numpy read s | numpy peak MiB | time ratio | memory ratio |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|")
        print(f"| {ours['rows']:,} | {mib:.0f} | {ours['s']:.2f} | {ours['peak_mib']:.0f} | {floor['s']:.2f} | "
              f"{floor['peak_mib']:.0f} | {ours['s'] / floor['s']:.1f} | {ours['peak_mib'] / floor['peak_mib']:.1f} |")
    finally:
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
