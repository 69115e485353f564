"""Stage 1, discover: walk a saved folder read-only and list the sources in it.

A source is one rank's files of one format family. Only the walk happens here: nothing is
opened beyond its name (except the first bytes of a JSON file whose name does not tell what it
is: a Kineto trace or not), and nothing is ever written into the input folder.
"""
from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from .errors import InputError
from .health import Warn

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

#: MindData (dataset pipeline) logs, by role (group 1: device or rank id). They add to the rank's
#: source found beside them: in the same folder, the folder above it (era F keeps them in FRAMEWORK/)
#: or one below it (msprof's PROF_* folders); alone they are a "minddata" source of their own. Era
#: A's raw get_next queue file (`DATA_PREPROCESS.dev.AICPUMI.<dev>.slice_<n>`) sits in the JOB's data/.
MINDDATA_FILE_PATTERNS: dict[str, re.Pattern[str]] = {
    "pipeline": re.compile(r"pipeline_profiling_(\d+)\.json"),
    "cpu_utilization": re.compile(r"minddata_cpu_utilization_(\d+)\.json"),
    "device_queue": re.compile(r"device_queue_profiling_(\d+)\.txt"),
    "iterator": re.compile(r"dataset_iterator_profiling_(\d+)\.txt"),
    "get_next_ascend": re.compile(r"minddata_aicpu_(\d+)\.txt"),
    "get_next_gpu": re.compile(r"minddata_getnext_profiling_(\d+)\.txt"),
    "get_next_raw": re.compile(r"DATA_PREPROCESS\.(?:dev\.)?AICPUMI\.(\d+)\.slice_\d+"),
}
#: Role prefix of MindData files listed with another family's source.
MINDDATA_ROLE = "minddata:"

#: Raw Ascend device files (eras A/B `JOB*` and era C `PROF_*/device_N/data`), by role. Group 1
#: is the device id; the data files are split into `.slice_<n>` pieces, read in
#: order. Markers (`.done`), archives (`.zip`) and MindSpore's own `.join` files never match.
_SLICE = r"(?:\.[A-Za-z]+\d*)?\.slice_\d+"
ASCEND_RAW_PATTERNS: dict[str, re.Pattern[str]] = {
    "hwts": re.compile(r"hwts\.log\.data\.45\.dev\.profiler_default_tag\.(\d+)" + _SLICE),
    "hwts_c": re.compile(r"hwts\.data\.(\d+)" + _SLICE),
    "training_trace": re.compile(r"training_trace\.46\.dev\.profiler_default_tag\.(\d+)" + _SLICE),
    "ts_track": re.compile(r"ts_track\.data\.(\d+)" + _SLICE),
    "task_desc_text": re.compile(r"Framework\.host\.(?:vm[._])?task_desc_info\.(\d+)" + _SLICE),
    "graph_desc_text": re.compile(r"Framework\.host\.(?:vm[._])?graph_desc_info\.(\d+)" + _SLICE),
    "point_text": re.compile(r"Framework\.host\.(?:vm[._])?point\.(\d+)" + _SLICE),
    "task_desc_bin": re.compile(r"Framework\.task_desc_info\.(\d+)" + _SLICE),
    "step_info_bin": re.compile(r"Framework\.step_info\.(\d+)" + _SLICE),
    "tensor_data_bin": re.compile(r"Framework\.tensor_data_info\.(\d+)" + _SLICE),
    "hash_dic": re.compile(r"Framework\.hash_dic\.(\d+)" + _SLICE),
    "aicpu": re.compile(r"(?:DATA_PREPROCESS\.(?:dev\.)?AICPU|aicpu\.data)\.(\d+)" + _SLICE),
    "host_start": re.compile(r"host_start\.log\.(\d+)"),
    "dev_start": re.compile(r"dev_start\.log\.(\d+)"),
    "device_info": re.compile(r"info\.json\.(\d+)"),
}
#: MindSpore's own Ascend result files that later analyses read back (MindSpore 1.x profiler
#: folder): the step-trace CSV (group 1: rank) and the HCCL traces, one folder per
#: communication op instance `hccl_info/<op>_<n>_..._dev<rank>/iter<N>.trace`.
STEP_TRACE_CSV = re.compile(r"step_trace_raw_(\d+)_detail_time\.csv")
HCCL_TRACE = re.compile(r"iter(\d+)\.trace")
HCCL_OP_DIR = re.compile(r".*_dev(\d+)")

#: msprof's export (era D): `PROF_*/device_N/timeline/<kind>_<device>_<model>_<iteration>.json` and
#: `PROF_*/device_N/summary/<kind>_<device>_<model>_<iteration>.csv` (CSV roles are named "csv:<kind>").
MSPROF_TIMELINE = re.compile(r"(msprof|task_time|hccl|step_trace)_(\d+)_(\d+)_(\d+)\.json")
MSPROF_SUMMARY = re.compile(r"(op_summary|step_trace)_(\d+)_(\d+)_(\d+)\.csv")
#: Era E: `PROF_*/mindstudio_profiler_output/<kind>_<timestamp>.csv|json` (the newest of a kind counts).
MSPROF_OUTPUT = re.compile(r"(op_summary|step_trace|msprof)_(\d{8,})\.(csv|json)")
#: Era F: the files of `<host>_<pid>_<time>_ascend_ms/ASCEND_PROFILER_OUTPUT/` that are read, by role.
ERA_F_OUTPUT_ROLES = {"kernel_details.csv": "csv:kernel_details", "trace_view.json": "trace_view"}

#: PyTorch profiler (Kineto) traces: a JSON object with a traceEvents array, plain or gzip, under any
#: name (tensorboard_trace_handler writes `<worker>.<ms>.pt.trace.json[.gz]`, a trace whatever is in
#: it). Other JSON is told apart by its first bytes (the only files discover opens); the rank comes
#: from distributedInfo there, else from the name (`rank-3`, `rank_3`, `worker3`).
KINETO_SUFFIXES = (".json", ".json.gz")
KINETO_NAMED = (".pt.trace.json", ".pt.trace.json.gz")  # a trace by its name, whatever is in it
_KINETO_HEAD = re.compile(rb'^\s*\{.*"traceEvents"', re.DOTALL)
_KINETO_HEAD_RANK = re.compile(rb'"distributedInfo"\s*:\s*\{[^}]*?"rank"\s*:\s*(\d+)', re.DOTALL)
_TRACE_NAME_RANK = re.compile(r"(?:rank|worker)[-_]?(\d+)", re.IGNORECASE)
#: Nsight Systems SQLite exports (`nsys export --type sqlite`, default name `report<n>.sqlite`): every
#: `.sqlite` file is taken for one (its reader says when it is not); the rank comes from the name.
NSYS_SUFFIXES = (".sqlite", ".sqlite3")

#: Roles that make a folder a raw Ascend source (clock and name files only add to one).
_ASCEND_PRIMARY_ROLES = ("hwts", "hwts_c", "training_trace", "ts_track", "task_desc_text",
                         "task_desc_bin", "aicpu")


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
    #: Split files (raw Ascend data) by role: every `.slice_<n>` piece, ordered by n.
    slices: dict[str, list[Path]] = field(default_factory=dict)
    #: msprof exports: the model ids the user asked for (None: any; the reader picks one).
    models: tuple[int, ...] | None = None
    #: Kineto and Nsight Systems: the name of the ranges that mark steps (None: ProfilerStep#N).
    step_range: str | None = None

    def all_files(self) -> list[tuple[str, Path]]:
        """(role, path) of every input file of the source, slices included."""
        return sorted(self.files.items()) + [(role, p) for role, paths in sorted(self.slices.items())
                                             for p in paths]

    @property
    def device_type(self) -> str:
        if self.family in ("ascend_raw", "mindspore_ascend_reports", "msprof_export"):
            return "ascend"
        gpu_roles = {"gpu_op_timestamp", "activity_timestamp", "gpu_framework", "kernel_summary"}
        return "gpu" if gpu_roles & self.files.keys() else "cpu"


def discover(path: str | Path, ranks: list[int] | None = None, models: list[int] | None = None,
             step_range: str | None = None, warn: Warn | None = None) -> list[Source]:
    """List the sources under `path` (a folder, or one file of a format that stands alone), optionally
    only the given ranks, ordered by rank.

    `models` narrows msprof exports to those model ids (the reader says when a rank has none);
    `step_range` names the ranges that mark steps in Kineto traces and Nsight Systems exports.
    Paths named like profiler files that are not regular files (FIFOs, devices, sockets, broken links)
    are never opened: each goes to `warn` as a not_regular_file report.
    """
    root = Path(path)
    if not root.exists():
        raise InputError(root, "no such file or folder")
    warn = warn or _ignore
    walk = os.walk(root, followlinks=False) if root.is_dir() else [(str(root.parent), [], [root.name])]
    sources: dict[tuple[Path, int], Source] = {}
    ascend: dict[tuple[Path, int], Source] = {}
    reports: dict[tuple[Path, int], Source] = {}
    minddata: dict[tuple[Path, int], Source] = {}
    traces: list[Source] = []
    for dirpath, dirnames, filenames in walk:
        dirnames.sort()
        directory = Path(dirpath)
        for filename in sorted(filenames):
            if not _regular_input(directory / filename, warn):
                continue
            for role, pattern in MINDSPORE_FILE_PATTERNS.items():
                match = pattern.fullmatch(filename)
                if match:
                    device_id = int(match.group(1))
                    source = sources.setdefault((directory, device_id), _new_source(directory, device_id))
                    source.files[role] = directory / filename
                    break
            else:
                if not (_add_report_file(reports, directory, filename)
                        or _add_msprof_file(reports, directory, filename)
                        or _add_minddata_file(minddata, directory, filename)
                        or _add_trace_file(traces, directory, filename)):
                    _add_ascend_file(ascend, directory, filename)
    found = [s for s in sources.values() if any(r in s.files for r in _PRIMARY_ROLES)]
    _attach_parent_profiler_info(found)
    found = _settle_era_f(found, reports)
    found += [s for s in ascend.values() if any(r in s.slices for r in _ASCEND_PRIMARY_ROLES)]
    found += list(reports.values())
    found += _number_traces(traces, step_range)
    found += _attach_minddata(minddata, found)
    for source in found:
        for paths in source.slices.values():
            paths.sort(key=_SLICE_ORDER[source.family])
    found.sort(key=lambda s: (s.rank, str(s.directory)))
    if ranks is not None:
        found = [s for s in found if s.rank in set(ranks)]
    if models is not None:
        for source in found:
            if source.family == "msprof_export":
                source.models = tuple(sorted(set(models)))
    return found


def _ignore(message: str, **details: object) -> None:
    pass


#: Names of every kind of file discover may open or hand to a reader.
_INPUT_PATTERNS = [*MINDSPORE_FILE_PATTERNS.values(), *MINDDATA_FILE_PATTERNS.values(), *ASCEND_RAW_PATTERNS.values(),
                   STEP_TRACE_CSV, HCCL_TRACE, MSPROF_TIMELINE, MSPROF_SUMMARY, MSPROF_OUTPUT]


def _regular_input(path: Path, warn: Warn) -> bool:
    """True for a regular file (or a link to one). A path named like an input that is anything else is
    reported and never opened: reading a FIFO blocks for ever, a device (/dev/zero) never ends."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        mode, problem = None, f"cannot be read ({exc.strerror or exc})"
    if mode is not None and stat.S_ISREG(mode):
        return True
    name = path.name
    if not (name.endswith((*KINETO_SUFFIXES, *NSYS_SUFFIXES, *ERA_F_OUTPUT_ROLES))
            or any(p.fullmatch(name) for p in _INPUT_PATTERNS)):
        return False
    if mode is not None:
        kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                 (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))
        problem = "is " + next((kind for test, kind in kinds if test(mode)), "not a regular file")
    warn(f"{path}: {problem}, not a regular file; never opened", check="not_regular_file",
         action="source_skipped", path=path)
    return False


def _new_source(directory: Path, device_id: int) -> Source:
    framework_layout = directory.name == "FRAMEWORK"
    pid = None
    if framework_layout:
        match = _ASCEND_MS_DIR.fullmatch(directory.parent.name)
        pid = int(match.group(1)) if match else None
    return Source(family="mindspore_framework", layout="framework" if framework_layout else "flat",
                  rank=device_id, device_id=device_id, directory=directory, pid=pid)


def _add_ascend_file(ascend: dict[tuple[Path, int], Source], directory: Path, filename: str) -> None:
    """File a raw Ascend file under its job folder: the folder itself, or its parent for `data/`."""
    for role, pattern in ASCEND_RAW_PATTERNS.items():
        match = pattern.fullmatch(filename)
        if match:
            device_id = int(match.group(1))
            job_dir = directory.parent if directory.name == "data" else directory
            source = ascend.setdefault((job_dir, device_id), Source(
                family="ascend_raw", layout="ascend_job", rank=device_id, device_id=device_id,
                directory=job_dir))
            source.slices.setdefault(role, []).append(directory / filename)
            return


def _add_report_file(reports: dict[tuple[Path, int], Source], directory: Path, filename: str) -> bool:
    """File a MindSpore Ascend result file (step-trace CSV, HCCL trace) under its profiler folder."""
    match = STEP_TRACE_CSV.fullmatch(filename)
    if match:
        rank, profiler_dir = int(match.group(1)), directory
    else:
        op_dir = HCCL_OP_DIR.fullmatch(directory.name)
        if not (HCCL_TRACE.fullmatch(filename) and op_dir and directory.parent.name == "hccl_info"):
            return False
        rank, profiler_dir = int(op_dir.group(1)), directory.parent.parent
    source = reports.setdefault((profiler_dir, rank), Source(
        family="mindspore_ascend_reports", layout="profiler_dir", rank=rank, device_id=rank,
        directory=profiler_dir))
    if match:
        source.files["step_trace_csv"] = directory / filename
    else:
        source.slices.setdefault("hccl_trace", []).append(directory / filename)
    return True


def _add_msprof_file(sources: dict[tuple[Path, int], Source], directory: Path, filename: str) -> bool:
    """File an msprof export (timeline JSON, summary CSV) under its device folder (era D), its
    PROF_* folder (era E, device id from the one `device_<n>` folder beside the output, else 0) or
    its `*_ascend_ms` folder (era F kernel_details.csv, rank from the profiler_info_<rank>.json there)."""
    if directory.name == "ASCEND_PROFILER_OUTPUT" and _ASCEND_MS_DIR.fullmatch(directory.parent.name):
        if filename not in ERA_F_OUTPUT_ROLES:
            return False
        ranks = [int(m.group(1)) for m in map(re.compile(r"profiler_info_(\d+)\.json").fullmatch,
                                             os.listdir(directory.parent)) if m]
        kind, device_id, folder, layout = ERA_F_OUTPUT_ROLES[filename], (ranks[0] if len(ranks) == 1 else 0), \
            directory.parent, "ascend_era_f"
    elif directory.name == "mindstudio_profiler_output":
        match = MSPROF_OUTPUT.fullmatch(filename)
        if not match:
            return False
        kind = ("csv:" if match.group(3) == "csv" else "") + match.group(1)
        devices = [int(m.group(1)) for m in map(re.compile(r"device_(\d+)").fullmatch, os.listdir(directory.parent)) if m]
        device_id, folder, layout = (devices[0] if len(devices) == 1 else 0), directory.parent, "ascend_era_e"
    else:
        pattern, prefix = {"timeline": (MSPROF_TIMELINE, ""), "summary": (MSPROF_SUMMARY, "csv:")}.get(
            directory.name, (None, ""))
        match = pattern.fullmatch(filename) if pattern else None
        if not match:
            return False
        kind, device_id, folder, layout = prefix + match.group(1), int(match.group(2)), directory.parent, "ascend_era_d"
    source = sources.setdefault((folder, device_id), Source(
        family="msprof_export", layout=layout, rank=device_id, device_id=device_id, directory=folder))
    source.slices.setdefault(kind, []).append(directory / filename)
    return True


def _add_minddata_file(minddata: dict[tuple[Path, int], Source], directory: Path, filename: str) -> bool:
    """File a MindData log under its folder (the JOB folder for era A's data/ files)."""
    for role, pattern in MINDDATA_FILE_PATTERNS.items():
        match = pattern.fullmatch(filename)
        if match:
            device_id = int(match.group(1))
            folder = directory.parent if role == "get_next_raw" and directory.name == "data" else directory
            source = minddata.setdefault((folder, device_id), Source(
                family="minddata", layout="minddata", rank=device_id, device_id=device_id, directory=folder))
            if role == "get_next_raw":
                source.slices.setdefault(role, []).append(directory / filename)
            else:
                source.files[role] = directory / filename
            return True
    return False


def _attach_minddata(minddata: dict[tuple[Path, int], Source], found: list[Source]) -> list[Source]:
    """List MindData files with the source of their rank in the same folder, the one above it or one
    below it (roles "minddata:<role>"); return the MindData sources that stand alone."""
    alone = []
    for (folder, rank), source in minddata.items():
        owner = next((s for s in found if s.rank == rank and (s.directory in (folder, folder.parent)
                                                              or folder in s.directory.parents)), None)
        if owner is None:
            alone.append(source)
            continue
        owner.files.update({MINDDATA_ROLE + role: path for role, path in source.files.items()})
        owner.slices.update({MINDDATA_ROLE + role: paths for role, paths in source.slices.items()})
    return alone


def _add_trace_file(traces: list[Source], directory: Path, filename: str) -> bool:
    """List a Chrome trace object (Kineto, Paddle) or an Nsight Systems SQLite export as its own source;
    its rank is settled by _number_traces."""
    from .ingest.trace_object import read_head  # the one reader helper discover needs: a trace's first bytes

    if filename.endswith(NSYS_SUFFIXES):
        family, role, rank_match = "nsys", "sqlite", _TRACE_NAME_RANK.search(filename)
    elif filename.endswith(KINETO_SUFFIXES):
        head = read_head(directory / filename)
        if not (filename.endswith(KINETO_NAMED) or _KINETO_HEAD.match(head)):
            return False
        family, role, rank_match = "kineto", "trace", _KINETO_HEAD_RANK.search(head) or _TRACE_NAME_RANK.search(filename)
    else:
        return False
    rank = int(rank_match.group(1)) if rank_match else -1
    traces.append(Source(family=family, layout=family, rank=rank, device_id=max(rank, 0),
                         directory=directory, files={role: directory / filename}))
    return True


def _number_traces(traces: list[Source], step_range: str | None) -> list[Source]:
    """A lone trace without a rank is rank 0; among several, one without a rank keeps -1 (its reader says so).
    Every trace gets the user's step range name."""
    if len(traces) == 1 and traces[0].rank < 0:
        traces[0].rank = 0
    for trace in traces:
        trace.step_range = step_range
    return traces


def _hccl_trace_order(path: Path) -> tuple[str, int]:
    return path.parent.name, int(HCCL_TRACE.fullmatch(path.name).group(1))


def _numbers_in_name(path: Path) -> tuple[int, ...]:
    return tuple(int(g) for g in re.findall(r"\d+", path.name))


def slice_number(path: Path) -> int:
    """n of a `<name>.slice_<n>` file; 0 for a file that is not split."""
    match = re.search(r"\.slice_(\d+)$", path.name)
    return int(match.group(1)) if match else 0


#: How each family's split files are ordered: slice number (raw Ascend), op folder then iteration (HCCL
#: traces), the numbers in the name (msprof: device, model, iteration or timestamp).
_SLICE_ORDER = {"ascend_raw": slice_number, "mindspore_ascend_reports": _hccl_trace_order,
                "msprof_export": _numbers_in_name, "minddata": slice_number}


def _attach_parent_profiler_info(sources: list[Source]) -> None:
    """In the 2.5+ layout profiler_info_<rank>.json sits beside FRAMEWORK/, not inside it."""
    for source in sources:
        if source.layout == "framework" and "profiler_info" not in source.files:
            candidate = source.directory.parent / f"profiler_info_{source.device_id}.json"
            if candidate.is_file():
                source.files["profiler_info"] = candidate


def _settle_era_f(framework: list[Source], reports: dict[tuple[Path, int], Source]) -> list[Source]:
    """Decide what an era F `*_ascend_ms` folder is; return the sources found in it and elsewhere.

    A folder with Ascend device data (kernel_details.csv, or msprof's PROF_* beside it) is one
    Ascend source: when it has a trace_view.json, that trace already holds the host ops of its
    FRAMEWORK/ files (on the trace's clock), which are listed with it and not read again. Without
    device data (MindSpore's CPU-only runs write the same folder) the FRAMEWORK files are the source.
    """
    era_f = {}
    for key, source in list(reports.items()):
        if source.layout != "ascend_era_f":
            continue
        if "csv:kernel_details" in source.slices or any(source.directory.glob("PROF_*")):
            era_f[source.directory] = source
        else:
            del reports[key]
    kept = []
    for source in framework:
        owner = era_f.get(source.directory.parent) if source.layout == "framework" else None
        if owner is None or "trace_view" not in owner.slices:
            kept.append(source)
        else:
            owner.files.update({f"framework:{role}": path for role, path in source.files.items()})
    return kept
