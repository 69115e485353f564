"""Stage 1, discover: walk a saved folder read-only and list the sources in it.

A source is one rank's files of one format family. Only the walk happens here: nothing is
opened beyond its name, and nothing is ever written into the input folder.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .errors import InputError

#: MindSpore framework-profiler files (CPU and GPU/CUPTI), by role. The number is the
#: device id (the rank id in 2.x multi-card runs).
MINDSPORE_FILE_PATTERNS: dict[str, re.Pattern[str]] = {
    "cpu_op_timestamp": re.compile(r"cpu_op_execute_timestamp_(\d+)\.txt"),
    "gpu_op_timestamp": re.compile(r"(?:gpu_)?op_execute_timestamp_(\d+)\.txt"),
    "activity_timestamp": re.compile(r"activity_execute_timestamp_(\d+)\.txt"),
    "cpu_framework": re.compile(r"cpu_framework_(\d+)\.txt"),
    "gpu_framework": re.compile(r"gpu_framework_(\d+)\.txt"),
    "kernel_summary": re.compile(r"gpu_activity_data_(\d+)\.csv"),
    "step_trace": re.compile(r"step_trace_profiling_(\d+)\.txt"),
    "start_time": re.compile(r"start_time_(\d+)\.txt"),
    "profiler_info": re.compile(r"profiler_info_(\d+)\.json"),
}
#: Files whose presence makes a folder a MindSpore framework source (the rest only add to one).
_PRIMARY_ROLES = ("cpu_op_timestamp", "gpu_op_timestamp", "activity_timestamp")
_ASCEND_MS_DIR = re.compile(r".*_(\d+)_\d+_ascend_ms$")


@dataclass
class Source:
    """One rank's files of one format family."""

    family: str
    layout: str
    rank: int
    device_id: int
    directory: Path
    files: dict[str, Path] = field(default_factory=dict)
    pid: int | None = None

    @property
    def device_type(self) -> str:
        gpu_roles = {"gpu_op_timestamp", "activity_timestamp", "gpu_framework", "kernel_summary"}
        return "gpu" if gpu_roles & self.files.keys() else "cpu"


def discover(path: str | Path, ranks: list[int] | None = None) -> list[Source]:
    """List the sources under `path`, optionally only the given ranks, ordered by rank."""
    root = Path(path)
    if not root.exists():
        raise InputError(root, "no such file or folder")
    if not root.is_dir():
        raise InputError(root, "expected a folder that a profiler saved, got a file")
    sources: dict[tuple[Path, int], Source] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        directory = Path(dirpath)
        for filename in sorted(filenames):
            for role, pattern in MINDSPORE_FILE_PATTERNS.items():
                match = pattern.fullmatch(filename)
                if match:
                    device_id = int(match.group(1))
                    source = sources.setdefault((directory, device_id), _new_source(directory, device_id))
                    source.files[role] = directory / filename
                    break
    found = [s for s in sources.values() if any(r in s.files for r in _PRIMARY_ROLES)]
    _attach_parent_profiler_info(found)
    found.sort(key=lambda s: (s.rank, str(s.directory)))
    if ranks is not None:
        found = [s for s in found if s.rank in set(ranks)]
    return found


def _new_source(directory: Path, device_id: int) -> Source:
    framework_layout = directory.name == "FRAMEWORK"
    pid = None
    if framework_layout:
        match = _ASCEND_MS_DIR.fullmatch(directory.parent.name)
        pid = int(match.group(1)) if match else None
    return Source(family="mindspore_framework", layout="framework" if framework_layout else "flat",
                  rank=device_id, device_id=device_id, directory=directory, pid=pid)


def _attach_parent_profiler_info(sources: list[Source]) -> None:
    """In the 2.5+ layout profiler_info_<rank>.json sits beside FRAMEWORK/, not inside it."""
    for source in sources:
        if source.layout == "framework" and "profiler_info" not in source.files:
            candidate = source.directory.parent / f"profiler_info_{source.device_id}.json"
            if candidate.is_file():
                source.files["profiler_info"] = candidate
