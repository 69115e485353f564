"""Time and peak memory of the FRAMEWORK TLV walk (issue 21) against MindSpore's own decoder and a plain read.

Writes, with the record writer of fixtures/generators/mindspore_fwk_tlv.py, a copy of the fixture's 2.6 folder whose
`FRAMEWORK/mindspore.memory_usage` holds --records memory events (the fixture's events repeated, each copy at new
addresses and a whole second later, so none repeats another) and whose `FRAMEWORK/mindspore.op_range` holds
--records op-range records (the fixture's host events, graph, stage, flow and Python-frame records, repeated the same
way). Then, each in a child process of its own, for each file:

* walk: profpipe's `framework_tlv.read_records` (the fixed parts, the texts, the damage checks);
* reader: the whole reader of the file (memory_usage_tlv.read: blocks and allocator samples; mindspore_op_range.read
  of the folder: host events and nested Python frames);
* mindspore: MindSpore 2.10's own `TLVDecoder.decode` on the file's bytes, read as its parsers read them (the CPU
  wheel's Python, --mindspore-python);
* numpy: `np.fromfile` of the file (the floor: the bytes read, nothing decoded).

With --before REV the walk and the reader are also run on that commit's profpipe (git archive into the scratch
folder). Times are after the imports; peak RSS is the child's, the RSS after its imports beside it; with --repeat
the fastest of the runs is shown. The children import profpipe from this checkout (or the --before one), whatever
PYTHONPATH says.

Usage: python benchmarks/run_framework_tlv.py [--records 1000000] [--before 975e153] [--repeat 3] [--keep DIR]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "mindspore_fwk_tlv" / "v2_6"
#: MindSpore's fixed formats (ascend_op_memory_viewer.py OpMemoryEvent, fwk_event.py OpRangeStruct).
FORMATS = {"memory_usage": "<i11QI4B", "op_range": "<5Qi3Hb3?"}
SECOND_NS = 1_000_000_000

_MEASURE = """
import json, resource, sys, time
from pathlib import Path
kind, layout, target = sys.argv[1:4]
peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
if kind == "numpy":
    import numpy as np
    base, start = peak(), time.perf_counter()
    rows = {"bytes": int(np.fromfile(target, dtype=np.uint8).size)}
elif kind == "mindspore":
    import struct
    from mindspore.profiler.common.tlv_decoder import TLVDecoder
    base, start = peak(), time.perf_counter()
    with open(target, "rb") as handle:  # FileManager.read_file_content(path, "rb")
        records = TLVDecoder.decode(handle.read(), sys.argv[4], struct.calcsize(sys.argv[4]))
    rows = {"records": len(records)}
else:
    from profpipe.discover import discover
    from profpipe.health import HealthLedger
    from profpipe.ingest import framework_tlv, memory_usage_tlv, mindspore_op_range
    ledger = HealthLedger()
    warn = ledger.for_source("-", 0)
    base, start = peak(), time.perf_counter()
    if kind == "walk":
        dtype, types, time_field = ((memory_usage_tlv.EVENT, (memory_usage_tlv.OWNER,), "create_at")
                                    if layout == "memory_usage" else
                                    (mindspore_op_range.RECORD, (13, 14, 15, 16, 17), "start"))
        rows = {"records": len(framework_tlv.read_records(Path(target), dtype, types, warn, "-", time_field).offset)}
    elif layout == "memory_usage":
        blocks, samples = memory_usage_tlv.read(Path(target), warn)
        rows = {"memory_block": blocks.height, "memory_record": samples.height}
    else:
        source = next(s for s in discover(Path(target)) if s.family == "mindspore_op_range")
        rows = {name: table.num_rows for name, table in mindspore_op_range.read(source, warn)}
print(json.dumps({"rows": rows, "s": time.perf_counter() - start, "peak_mib": peak(), "base_mib": base}))
"""


def _generator():
    spec = importlib.util.spec_from_file_location("mindspore_fwk_tlv", ROOT / "fixtures" / "generators" /
                                                  "mindspore_fwk_tlv.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def scale(folder: Path, records: int) -> None:
    """The fixture's 2.6 folder with both FRAMEWORK files grown to about `records` records each."""
    gen = _generator()
    shutil.copytree(FIXTURE, folder.parent, dirs_exist_ok=True)
    framework = folder / "FRAMEWORK"
    with open(framework / "mindspore.memory_usage", "wb") as out:
        for copy in range(-(-records // len(gen.MEMORY))):
            for device, tid, pid, t, addr, *rest, owner in gen.MEMORY:
                fixed = struct.pack(FORMATS["memory_usage"], device, tid, pid, gen.BASE_NS + t + copy * SECOND_NS,
                                    addr + copy * 0x1000, *rest)
                out.write(gen.record(fixed, {13: owner} if owner else {}))
    rows = gen.op_ranges()
    period = gen.tick(SECOND_NS) - gen.tick(0)
    with open(framework / "mindspore.op_range", "wb") as out:
        for copy in range(-(-records // len(rows))):
            for tid, flow, step, start, end, *rest, fields in rows:
                shift = copy * period  # a zero start stays zero (MindSpore drops it)
                out.write(gen.record(struct.pack(FORMATS["op_range"], tid, flow, step, start and start + shift,
                                                 end + shift, *rest), fields))


def measure(python: str, kind: str, layout: str, target: Path, code: Path) -> dict:
    """One child's figures; `code` is the profpipe checkout it imports (run from elsewhere, so nothing shadows it)."""
    done = subprocess.run([python, "-c", _MEASURE, kind, layout, str(target), FORMATS[layout]], check=True,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(code)},
                          cwd=tempfile.gettempdir())
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="records per file")
    parser.add_argument("--before", help="also run the walk and the reader of this commit's profpipe")
    parser.add_argument("--mindspore-python", default="/tmp/ms/bin/python", help="Python with MindSpore installed")
    parser.add_argument("--keep", type=Path, help="write the scaled folder here and keep it")
    parser.add_argument("--repeat", type=int, default=1, help="run each child this many times; the fastest is shown")
    args = parser.parse_args()
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="profpipe-benchtlv-"))
    try:
        folder = scratch / "in" / next(FIXTURE.glob("*_ascend_ms")).name
        if not (folder / "FRAMEWORK" / "mindspore.op_range").exists():
            scale(folder, args.records)
        before = None
        if args.before:
            before = scratch / "before"
            shutil.rmtree(before, ignore_errors=True)
            before.mkdir()
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before, "profpipe", "sql", "schemas"],
                                     check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
        print(f"{'file':<13} {'MiB':>6} {'measure':<16} {'s':>7} {'peak MiB':>9} {'import MiB':>11}  rows")
        for layout in ("memory_usage", "op_range"):
            path = folder / "FRAMEWORK" / f"mindspore.{layout}"
            target = {"walk": path, "reader": path if layout == "memory_usage" else folder.parent}
            runs = [("numpy", sys.executable, "numpy", path, ROOT),
                    ("mindspore", args.mindspore_python, "mindspore", path, ROOT)]
            for kind in ("walk", "reader"):
                if before is not None:
                    runs.append((f"{kind} (before)", sys.executable, kind, target[kind], before))
                runs.append((kind, sys.executable, kind, target[kind], ROOT))
            for name, python, kind, where, code in runs:
                got = min((measure(python, kind, layout, where, code) for _ in range(args.repeat)),
                          key=lambda run: run["s"])
                print(f"{layout:<13} {path.stat().st_size / 2**20:6.1f} {name:<16} {got['s']:7.2f} "
                      f"{got['peak_mib']:9.0f} {got['base_mib']:11.0f}  {got['rows']}", flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
