"""Test helper: copies of a MindSpore dump with the durations in its op timestamp file rewritten (an op type made
slower, every op given a little noise), for the regression tests of `profpipe diff` and the warehouse trends.

The file (cpu_op_execute_timestamp_N.txt, gpu_op_execute_timestamp_N.txt) has one line per op instance,
`full op name;kind;start,duration_ms[,tid] start,duration_ms[,tid] ...`; durations are decimal ms, rewritten with
Decimal so that the copy's numbers are exactly the ones the test expects.
"""
from __future__ import annotations

import random
import shutil
from decimal import Decimal
from pathlib import Path

#: LeNet trained by MindSpore 2.10 on the CPU: 18 steps, no step trace in the dump.
LENET_OPS = Path("vm_4374_20261121001621178_ascend_ms") / "FRAMEWORK" / "cpu_op_execute_timestamp_0.txt"


def op_type(name: str) -> str:
    """The op type of a full op name: Default/.../Conv2D-op0 -> Conv2D."""
    return name.rsplit("/", 1)[-1].rsplit("-op", 1)[0]


def durations_ms(path: Path, of_type: str) -> list[Decimal]:
    """The durations (ms) of every execution of the op type `of_type` in the op timestamp file `path`."""
    found = []
    for line in path.read_text().splitlines():
        name, _, samples = line.split(";", 2)
        if op_type(name) == of_type:
            found += [Decimal(sample.split(",")[1]) for sample in samples.split()]
    return found


def edited_copy(source: Path, target: Path, ops: Path, *, slower: str | None = None, factor: str = "1",
                noise_seed: int | None = None, noise: str = "0.002") -> None:
    """A copy of the dump `source` at `target` whose op timestamp file (`ops`, relative) has every execution of the
    op type `slower` `factor` times as long and, with `noise_seed`, every execution's duration scaled by a random
    factor within 1 +- `noise` (rounded to the file's 6 decimals)."""
    shutil.copytree(source, target)
    rng = random.Random(noise_seed)
    lines = []
    for line in (source / ops).read_text().splitlines():
        name, kind, samples = line.split(";", 2)
        rewritten = []
        for sample in samples.split():
            fields = sample.split(",")
            dur = Decimal(fields[1])
            if op_type(name) == slower:
                dur *= Decimal(factor)
            if noise_seed is not None:
                dur *= 1 + Decimal(noise) * Decimal(rng.uniform(-1, 1)).quantize(Decimal("0.0001"))
            fields[1] = str(dur.quantize(Decimal("0.000001")))
            rewritten.append(",".join(fields))
        lines.append(";".join((name, kind, " ".join(rewritten) + " ")))
    (target / ops).write_text("\n".join(lines) + "\n")
