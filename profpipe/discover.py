"""Stage 1, discover: walk a saved folder read-only and list the sources in it.

A source is one rank's files of one format family from one profiling cycle. Several sources may hold
one rank and all are read (see `discover`): each carries its rank, where the rank came from, and its
capture (the rank's profiling cycle, numbered by time after ingest). Only the walk
happens here: nothing is opened beyond its name (except the first bytes of a JSON file whose name does
not tell what it is: a Kineto trace or not, the export files whose task records decide between a raw
msprof folder and its export, and an Ascend db export's RANK_DEVICE_MAP and TASK row count, read-only), and nothing
is ever written into the input folder.
"""
from __future__ import annotations

import filecmp
import fnmatch
import json
import os
import re
import sqlite3
import stat
from dataclasses import dataclass, field
from pathlib import Path

from .errors import InputError, UsageError
from .health import Warn
from .output import FINGERPRINT_EDGE, fingerprint

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
#: Files beside ASCEND_PROFILER_OUTPUT/ that make a folder an Ascend result folder (torch_npu `*_ascend_pt`, MindSpore
#: 2.5+ `*_ascend_ms`), whatever the folder is called: users rename them (`rank0_ascend_pt`, `rank_0_ascend_pt`).
_RESULT_MARKERS = re.compile(r"profiler_info(?:_\d+)?\.json|profiler_metadata\.json|FRAMEWORK|PROF_.*")

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

#: MindSpore 2.1-2.3's host info (`profile_framework`): `<profiler dir>/host_info/host_info_<id>.csv`, id the
#: RANK_ID (GPU: the device id). Like MindData logs it adds to the rank's source found nearest it (the profiler
#: folder above host_info/), or stands alone as a "host_info" source (MindSpore's `_offline_parse` reads such a
#: folder after a crash). MindSpore's own derivations beside it (timeline_<id>.json, host_memory_<id>.csv,
#: dataset_<id>.csv) are not read: they are made from the raw file.
HOST_INFO_FILE = re.compile(r"host_info_(\d+)\.csv")
#: Role of the host info file of a source of its own, and its prefix when listed with another family's source.
HOST_INFO_ROLE = "host_info"
HOST_INFO_PREFIX = "host_info:"

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
#: The device-level PMU summaries of an era D `summary/` folder: `<kind>_<device>[_<model>[_<iteration>]].csv`
#: (L2 cache hit rates per task, HBM/DDR and PCIe bandwidth); their roles are named "pmu:<kind>".
MSPROF_PMU_SUMMARY = re.compile(r"(l2_cache|hbm|ddr|pcie)_(\d+)(?:_(\d+))?(?:_(\d+))?\.csv")
PMU_KINDS = ("l2_cache", "hbm", "ddr", "pcie")
#: Era E: `PROF_*/mindstudio_profiler_output/<kind>_<timestamp>.csv|json` (the newest of a kind counts).
MSPROF_OUTPUT = re.compile(r"(op_summary|step_trace|msprof_tx|msprof|l2_cache|hbm|ddr|pcie)_(\d{8,})\.(csv|json)")
#: Era F: the files of `<host>_<pid>_<time>_ascend_ms/ASCEND_PROFILER_OUTPUT/` that are read, by role
#: (MindSpore 2.5+ copies msprof's first l2_cache_*, hbm_* and pcie_* export there under these names).
ERA_F_OUTPUT_ROLES = {"kernel_details.csv": "csv:kernel_details", "trace_view.json": "trace_view",
                      "l2_cache.csv": "pmu:l2_cache", "hbm.csv": "pmu:hbm", "pcie.csv": "pmu:pcie"}
#: Role prefix of the files of the msprof export inside an era F folder (PROF_*/mindstudio_profiler_output/).
ERA_F_EXPORT_PREFIX = "export:"
#: The Ascend tools' own derived files in ASCEND_PROFILER_OUTPUT/ of a result folder, by role: a source of family
#: `ascend_summary` (profpipe/ingest/ascend_summary.py), also the only files of a trimmed cluster rank.
SUMMARY_FILES = {"step_trace_time.csv": "step_trace_csv", "communication.json": "communication",
                 "communication_matrix.json": "communication_matrix", "analysis.db": "analysis_db"}

#: Ascend db exports (formats-ascend-today.md §3): torch_npu's and MindSpore's in ASCEND_PROFILER_OUTPUT/ (group 2: the
#: rank; none on a single card), msprof's in its PROF_* folder.
ASCEND_DB = re.compile(r"ascend_(?:pytorch|mindspore)_profiler(?:_(\d+))?\.db")
MSPROF_DB = re.compile(r"msprof_\d+\.db")

#: MindSpore's Ascend memory files (profile_memory=True; shared/reference/formats-mindspore-extras.md §2), by role:
#: MindSpore's own (group 1: rank) in its profiler folder (1.x-2.4 flat, 2.5+ FRAMEWORK/), the files MindSpore writes
#: or copies into `*_ascend_ms/ASCEND_PROFILER_OUTPUT/` (rank from profiler_info_<rank>.json there), and msprof's
#: exports in `PROF_*/mindstudio_profiler_output/` (era E+) or `PROF_*/device_N/summary/` (era D).
MEMORY_FILE_PATTERNS: dict[str, re.Pattern[str]] = {
    "ms_record": re.compile(r"cpu_ms_memory_record_(\d+)\.txt"),
    "ms_operator": re.compile(r"operator_memory_(\d{1,7})\.csv"),
    "ms_usage": re.compile(r"memory_usage_(\d+)\.pb"),  # 1.2-2.3: tensor lifetimes by graph node (protobuf)
}
MEMORY_OUTPUT_ROLES = {"operator_memory.csv": "output_operator", "memory_record.csv": "output_record",
                       "npu_module_mem.csv": "output_module", "static_op_mem.csv": "output_static"}
#: MindSpore 2.5+'s raw memory events (framework TLV) in `*_ascend_ms/FRAMEWORK/` (rank as for the output files).
MEMORY_FRAMEWORK_ROLES = {"mindspore.memory_usage": "fwk_memory_usage"}
#: MindSpore's binary op-range data (framework TLV: host framework events and, 2.6+, Python frames) in the
#: FRAMEWORK/ folder of a profiler folder: 2.5+ `mindspore.op_range` (rank from profiler_info_<rank>.json beside
#: FRAMEWORK/), 2.4 `op_range_<rank>` (era E: FRAMEWORK/ beside PROF_*). A source of its own (family
#: mindspore_op_range), read by profpipe/ingest/mindspore_op_range.py.
OP_RANGE_FILES = {"mindspore.op_range": "op_range"}
OP_RANGE_RANKED = re.compile(r"op_range_(\d+)")
MSPROF_MEMORY = re.compile(r"(memory_record|npu_mem|npu_module_mem|static_op_mem|operator_memory)_(\d+)(?:_\d+)*\.csv")

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

#: MindSpore's add_metadata file (2.4+, ingest/user_metadata.py): it belongs to every source at or below its folder.
USER_METADATA_FILE = "profiler_metadata.json"

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
    #: Kineto and Nsight Systems: the name of the ranges that mark steps (None: ProfilerStep#N); msprof exports:
    #: the MSTX ranges that replace the step_trace steps (None: step_trace's).
    step_range: str | None = None
    #: The profiling cycle of the rank this source holds (0-based, by time: set after ingest by profpipe/captures.py).
    capture: int = 0
    #: Where the rank came from: "file" (distributedInfo, profiler_info, info.json), "name", "rank-map",
    #: "only-source" (the one trace of an input without a rank) or "" (unknown: see `problem`).
    rank_from: str = "name"
    #: Why the source cannot be read (no rank); the run reports it as the source's error.
    problem: str | None = None
    #: The location of the source that supersedes this one (a more complete msprof copy, or the source it is a
    #: byte-for-byte copy of); not read.
    superseded_by: Path | None = None
    #: Why it was superseded (the record counts compared, or the copy's files).
    superseded_why: str = ""
    #: The nearest profiler_metadata.json in the source's folder or above it, inside the input (None: none).
    user_metadata: Path | None = None
    #: --select: the normalized tables the run needs from this source (the reader may skip the work of the others:
    #: profpipe/ingest/__init__.py read); None: every table.
    wanted: frozenset[str] | None = None

    def all_files(self) -> list[tuple[str, Path]]:
        """(role, path) of every input file of the source, slices included."""
        return sorted(self.files.items()) + [(role, p) for role, paths in sorted(self.slices.items())
                                             for p in paths]

    def size_bytes(self) -> int:
        """Bytes the source's input files hold once decompressed (those that can be stat'ed): what a reader
        works through, and what sizes worker pools and orders their work."""
        return sum(_decompressed_size(path) for _, path in self.all_files())

    @property
    def device_type(self) -> str:
        if self.family in ("ascend_raw", "mindspore_ascend_reports", "msprof_export", "ascend_db", "ascend_summary"):
            return "ascend"
        if self.family == "mindspore_memory":
            return "cpu" if set(self.slices) == {"ms_record"} else "ascend"
        gpu_roles = {"gpu_op_timestamp", "activity_timestamp", "gpu_framework", "kernel_summary"}
        return "gpu" if gpu_roles & self.files.keys() else "cpu"


def discover(path: str | Path, ranks: list[int] | None = None, models: list[int] | None = None,
             step_range: str | None = None, warn: Warn | None = None,
             rank_map: str | Path | None = None, seen: list[Path] | None = None) -> list[Source]:
    """List the sources under `path` (a folder, or one file of a format that stands alone), optionally
    only the given ranks, ordered by rank.

    `models` narrows msprof exports to those model ids (the reader says when a rank has none);
    `step_range` names the ranges that mark steps in Kineto traces, Nsight Systems exports and msprof
    exports' MSTX markers.
    Paths named like profiler files that are not regular files (FIFOs, devices, sockets, broken links)
    are never opened: each goes to `warn` as a not_regular_file report.

    The source model: several sources may hold one rank. MindData logs join their rank's MindSpore/Ascend
    source wherever it is under `path`; a raw msprof folder and an export of it (same rank, same PROF_*
    job) keep the more complete one, the other is marked superseded; after ingest the remaining sources of
    a rank are numbered into captures (profiling cycles) by time (profpipe/captures.py). Of sources of one rank and
    family that hold the same bytes (a copy under another name or in another folder), the first is read and the
    others are marked superseded by it. A rank comes from the file, then the file name, then
    `rank_map` (a file mapping paths or globs relative to `path` to ranks, see `load_rank_map`); a source
    with none gets a `problem` naming what to do. `seen`, when given, receives every file the walk met (for
    profpipe/unread.py's inventory, so that the input is walked once).
    """
    root = Path(path)
    if not root.exists():
        raise InputError(root, "no such file or folder")
    mapping = load_rank_map(rank_map) if rank_map is not None else []
    if root.is_file():
        _check_stands_alone(root)
    warn = warn or _ignore
    walk = os.walk(root, followlinks=False) if root.is_dir() else [(str(root.parent), [], [root.name])]
    sources: dict[tuple[Path, int], Source] = {}
    ascend: dict[tuple[Path, int], Source] = {}
    reports: dict[tuple[Path, int], Source] = {}
    minddata: dict[tuple[Path, int], Source] = {}
    memory: dict[tuple[Path, int], Source] = {}
    host_info: dict[tuple[Path, int], Source] = {}
    op_range: dict[tuple[Path, int], Source] = {}
    dbs: list[Source] = []
    summaries: dict[Path, Source] = {}
    traces: list[Source] = []
    metadata_files: list[Path] = []
    for dirpath, dirnames, filenames in walk:
        dirnames.sort()
        directory = Path(dirpath)
        if root.is_file() or USER_METADATA_FILE in filenames:  # a file's folder is not walked: look beside it
            _add_user_metadata(metadata_files, directory / USER_METADATA_FILE)
        for filename in sorted(filenames):
            if seen is not None:
                seen.append(directory / filename)
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
                if not (_add_ascend_db(dbs, directory, filename)
                        or _add_report_file(reports, directory, filename)
                        or _add_summary_file(summaries, directory, filename)
                        or _add_msprof_file(reports, directory, filename)
                        or _add_minddata_file(minddata, directory, filename)
                        or _add_memory_file(memory, directory, filename)
                        or _add_op_range_file(op_range, directory, filename)
                        or _add_host_info_file(host_info, directory, filename)
                        or _add_trace_file(traces, directory, filename)):
                    _add_ascend_file(ascend, directory, filename)
    found = [s for s in sources.values() if any(r in s.files for r in _PRIMARY_ROLES)]
    _attach_parent_profiler_info(found)
    found = _settle_era_f(found, reports)
    found += [s for s in ascend.values() if any(r in s.slices for r in _ASCEND_PRIMARY_ROLES)]
    found += list(reports.values())
    found += list(memory.values())
    found += list(summaries.values())
    found += _note_trace_views(list(op_range.values()), found)
    _mark_ranks_from_files(found)
    found += dbs
    found += _number_traces(traces, step_range)
    for source in found:  # msprof exports and raw PROF folders: MSTX ranges of that name replace the step_trace steps
        if source.family in ("msprof_export", "ascend_raw"):
            source.step_range = step_range
    _apply_rank_map(found, mapping, root if root.is_dir() else root.parent, warn)
    _rank_unranked(found)
    found += _attach_minddata(minddata, found)
    found += _attach_side_logs(host_info, found, HOST_INFO_PREFIX, (*_MINDDATA_OWNERS, "mindspore_memory", "minddata"))
    for source in found:
        for paths in source.slices.values():
            paths.sort(key=_SLICE_ORDER[source.family])
    found.sort(key=lambda s: (s.rank, _natural(str(s.directory)), _natural(_location(s).name)))
    _supersede_msprof_copies(found)
    _supersede_text_by_db(found)
    _supersede_copies(found)
    _own_user_metadata(found, metadata_files)
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
                   *MEMORY_FILE_PATTERNS.values(), OP_RANGE_RANKED, HOST_INFO_FILE, STEP_TRACE_CSV, HCCL_TRACE, MSPROF_TIMELINE,
                   MSPROF_SUMMARY, MSPROF_PMU_SUMMARY, MSPROF_OUTPUT, MSPROF_MEMORY]


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
    if not (name.endswith((*KINETO_SUFFIXES, *NSYS_SUFFIXES, *ERA_F_OUTPUT_ROLES, *SUMMARY_FILES, *MEMORY_OUTPUT_ROLES,
                           *MEMORY_FRAMEWORK_ROLES, *OP_RANGE_FILES))
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


def _add_user_metadata(found: list[Path], path: Path) -> None:
    """List a profiler_metadata.json that is a regular file (never a link: the input's own metadata only)."""
    try:
        if stat.S_ISREG(path.lstat().st_mode):
            found.append(path)
    except OSError:
        pass


def _own_user_metadata(sources: list[Source], metadata_files: list[Path]) -> None:
    """Give each source the nearest metadata file in its folder or above it."""
    listed = set(metadata_files)
    for source in sources:
        source.user_metadata = next((folder / USER_METADATA_FILE for folder in (source.directory, *source.directory.parents)
                                     if folder / USER_METADATA_FILE in listed), None)


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
    if directory.name == "ASCEND_PROFILER_OUTPUT" and is_ascend_result(directory.parent):
        if filename not in ERA_F_OUTPUT_ROLES:
            return False
        rank = ascend_result_rank(directory.parent)[0]
        kind, device_id, folder, layout = ERA_F_OUTPUT_ROLES[filename], max(rank, 0), directory.parent, "ascend_era_f"
    elif directory.name == "mindstudio_profiler_output":
        match = MSPROF_OUTPUT.fullmatch(filename)
        if not match:
            return False
        kind = ("pmu:" if match.group(1) in PMU_KINDS else "csv:" if match.group(3) == "csv" else "") + match.group(1)
        devices = [int(m.group(1)) for m in map(re.compile(r"device_(\d+)").fullmatch, os.listdir(directory.parent)) if m]
        device_id, folder, layout = (devices[0] if len(devices) == 1 else 0), directory.parent, "ascend_era_e"
    else:
        pattern, prefix = {"timeline": (MSPROF_TIMELINE, ""), "summary": (MSPROF_SUMMARY, "csv:")}.get(
            directory.name, (None, ""))
        match = pattern.fullmatch(filename) if pattern else None
        if not match and directory.name == "summary":
            pattern, prefix = MSPROF_PMU_SUMMARY, "pmu:"
            match = pattern.fullmatch(filename)
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


def _add_memory_file(memory: dict[tuple[Path, int], Source], directory: Path, filename: str) -> bool:
    """File a memory file (MEMORY_FILE_PATTERNS, MEMORY_OUTPUT_ROLES, MSPROF_MEMORY) under its rank's profiler
    folder (`_memory_home`), so that MindSpore's copies and the msprof files they were made from are one
    source and its reader reads each kind of data once."""
    match, role = None, None
    if directory.name in ("mindstudio_profiler_output", "summary"):
        match = MSPROF_MEMORY.fullmatch(filename)
        if not match:
            return False
        role = "msprof:" + match.group(1)
        if directory.name == "summary":
            device = re.fullmatch(r"device_(\d+)", directory.parent.name)
            rank = int(device.group(1)) if device else int(match.group(2))
        else:
            devices = [int(m.group(1)) for m in map(re.compile(r"device_(\d+)").fullmatch, os.listdir(directory.parent))
                       if m]
            rank = devices[0] if len(devices) == 1 else 0
    elif (directory.name == "ASCEND_PROFILER_OUTPUT" and filename in MEMORY_OUTPUT_ROLES
          or directory.name == "FRAMEWORK" and filename in MEMORY_FRAMEWORK_ROLES):
        role = MEMORY_OUTPUT_ROLES.get(filename) or MEMORY_FRAMEWORK_ROLES[filename]
        rank = ascend_result_rank(directory.parent)[0]
        named = re.match(r"rank-(\d+)_", directory.parent.name)
        rank = rank if rank >= 0 else int(named.group(1)) if named else 0
    else:
        for name, pattern in MEMORY_FILE_PATTERNS.items():
            match = pattern.fullmatch(filename)
            if match:
                role, rank = name, int(match.group(1))
                break
        if role is None:
            return False
    home = _memory_home(directory)
    source = memory.setdefault((home, rank), Source(family="mindspore_memory", layout="memory", rank=rank,
                                                   device_id=rank, directory=home))
    source.slices.setdefault(role, []).append(directory / filename)
    return True


def _add_op_range_file(op_range: dict[tuple[Path, int], Source], directory: Path, filename: str) -> bool:
    """File MindSpore's op_range data (OP_RANGE_FILES, OP_RANGE_RANKED) under the profiler folder above FRAMEWORK/."""
    ranked = OP_RANGE_RANKED.fullmatch(filename)
    if directory.name != "FRAMEWORK" or not (ranked or filename in OP_RANGE_FILES):
        return False
    folder = directory.parent
    if ranked:
        role, rank = "op_range_2_4", int(ranked.group(1))
    else:
        rank = ascend_result_rank(folder)[0]
        named = re.match(r"rank-(\d+)_", folder.name)
        role, rank = OP_RANGE_FILES[filename], rank if rank >= 0 else int(named.group(1)) if named else 0
    match = _ASCEND_MS_DIR.fullmatch(folder.name)
    source = op_range.setdefault((folder, rank), Source(
        family="mindspore_op_range", layout="op_range", rank=rank, device_id=rank, directory=folder,
        pid=int(match.group(1)) if match else None))
    source.files[role] = directory / filename
    return True


def _add_ascend_db(dbs: list[Source], directory: Path, filename: str) -> bool:
    """List an Ascend db export as a source of its own (family ascend_db, role db, and analysis_db: the
    analysis.db beside it): `ascend_(pytorch|mindspore)_profiler[_<N>].db` in ASCEND_PROFILER_OUTPUT/ (its
    folder: the result folder above), `msprof_<digits>.db` in a PROF_* folder. The rank: the N of the name, else
    the result folder's (ascend_result_rank), else the db's RANK_DEVICE_MAP rankId (-1: unset), else
    --rank-map or the only-source rule (_rank_unranked)."""
    match = ASCEND_DB.fullmatch(filename)
    if match and directory.name == "ASCEND_PROFILER_OUTPUT":
        folder, named = directory.parent, match.group(1)
    elif MSPROF_DB.fullmatch(filename) and directory.name.startswith("PROF_"):
        folder, named = directory, None
    else:
        return False
    path = directory / filename
    files = {"db": path}
    if (directory / "analysis.db").is_file():
        files["analysis_db"] = directory / "analysis.db"
    rank, rank_from, info = ascend_result_rank(folder)
    if info is not None:
        files["profiler_info"] = info
    if named is not None:
        rank, rank_from = int(named), "name"
    elif rank < 0:
        rank, rank_from = _db_facts(path)[0], "file"
    dbs.append(Source(family="ascend_db", layout="ascend_db", rank=rank, device_id=max(rank, 0), directory=folder,
                      files=files, rank_from=rank_from if rank >= 0 else ""))
    return True


def _db_facts(path: Path) -> tuple[int, int]:
    """(RANK_DEVICE_MAP's rankId or -1, TASK rows or -1) of an Ascend db export; (-1, -1) when it cannot be read."""
    from .ingest.scratch import open_sqlite  # as for read_head: the one reader helper needed here

    try:
        db = open_sqlite(path)
        try:
            tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            tasks = db.execute("SELECT count(*) FROM TASK").fetchone()[0] if "TASK" in tables else -1
            ranks = db.execute("SELECT min(rankId) FROM RANK_DEVICE_MAP WHERE typeof(rankId) = 'integer' "
                               "AND rankId >= 0").fetchone()[0] if "RANK_DEVICE_MAP" in tables else None
        finally:
            db.close()
    except (sqlite3.Error, UnicodeDecodeError):  # a damaged schema's message quotes bytes that are not UTF-8
        return -1, -1
    return (ranks if isinstance(ranks, int) and ranks < 1 << 31 else -1), tasks


def _supersede_text_by_db(sources: list[Source]) -> None:
    """A result folder whose ASCEND_PROFILER_OUTPUT/ holds a db export (newer torch_npu writes it beside the text
    files; data_simplification=False keeps the PROF_* job it was made from): the db is read, and the other sources
    of that folder and below (text export, memory CSVs, raw PROF_* data or its msprof export or msprof db: one
    capture, whatever rank or device their names say) are marked superseded by it; the other way round when the db
    holds no task (no TASK table, no rows, or not SQLite): then the text files are the capture."""
    dbs = [s for s in sources if s.family == "ascend_db" and s.superseded_by is None
           and s.files["db"].parent.name == "ASCEND_PROFILER_OUTPUT"]
    for db in dbs:
        same = [s for s in sources if s is not db and s.superseded_by is None
                and s.family in ("msprof_export", "mindspore_memory", "ascend_raw", "ascend_db")
                and (s.directory == db.directory or db.directory in s.directory.parents)]
        if not same:
            continue
        tasks = _db_facts(db.files["db"])[1]
        if tasks > 0:
            for other in same:
                other.superseded_by = db.files["db"]
                other.superseded_why = (f"the db export of the same capture ({tasks} device tasks), which holds "
                                        "everything the text export and the raw data give")
        else:
            db.superseded_by = _location(same[0])
            db.superseded_why = "the text export of the same capture: the db holds no device task"


def is_ascend_result(folder: Path) -> bool:
    """True for an Ascend result folder (torch_npu, MindSpore 2.5+), told by what it holds, not by its name: an
    ASCEND_PROFILER_OUTPUT/ folder with profiler_info[_<rank>].json, profiler_metadata.json, FRAMEWORK/ or a PROF_*
    job beside it."""
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    return "ASCEND_PROFILER_OUTPUT" in names and any(_RESULT_MARKERS.fullmatch(name) for name in names)


def _add_summary_file(summaries: dict[Path, Source], directory: Path, filename: str) -> bool:
    """File one of the Ascend tools' derived files (SUMMARY_FILES) in ASCEND_PROFILER_OUTPUT/ of an Ascend result
    folder under that folder: one `ascend_summary` source per folder, ranked by ascend_result_rank."""
    if filename not in SUMMARY_FILES or directory.name != "ASCEND_PROFILER_OUTPUT" \
            or not is_ascend_result(directory.parent):
        return False
    folder = directory.parent
    source = summaries.get(folder)
    if source is None:
        rank, rank_from, info = ascend_result_rank(folder)
        source = summaries[folder] = Source(family="ascend_summary", layout="ascend_summary", rank=rank,
                                            device_id=max(rank, 0), directory=folder, rank_from=rank_from)
        if info is not None:
            source.files["info"] = info
    source.files[SUMMARY_FILES[filename]] = directory / filename
    return True


def ascend_result_rank(folder: Path) -> tuple[int, str, Path | None]:
    """(rank, where it came from, the profiler_info file) of an Ascend result folder, by msprof-analyze's rule first:
    the <N> of its one profiler_info_<N>.json name; else that file's (or a bare profiler_info.json's) `rank_id` (an int
    or a text such as "0"; -1 is unset); else profiler_metadata.json's distributed_args.rank. (-1, "", file) when
    none says: --rank-map, or being the only result folder of the input, ranks it (_rank_unranked)."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return -1, "", None
    ranked = [(int(m.group(1)), folder / m.group(0)) for m in map(MINDSPORE_FILE_PATTERNS["profiler_info"].fullmatch, names) if m]
    if len(ranked) == 1:
        return ranked[0][0], "name", ranked[0][1]
    info = ranked[0][1] if ranked else folder / "profiler_info.json" if "profiler_info.json" in names else None
    rank = _rank_number(_json_member(info, "rank_id"))
    if rank is None:
        rank = _rank_number(_json_member(folder / USER_METADATA_FILE if USER_METADATA_FILE in names else None,
                                         "distributed_args", "rank"))
    return (rank, "file", info) if rank is not None else (-1, "", info)


def _json_member(path: Path | None, *keys: str) -> object:
    """The member at `keys` of a small JSON object file (None when the file or a member is missing or unreadable)."""
    if path is None:
        return None
    try:
        value: object = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _rank_number(value: object) -> int | None:
    """A rank written as an int or a decimal text ("0"); None for anything else, and for -1 (unset)."""
    if isinstance(value, str) and re.fullmatch(r"\s*\d{1,9}\s*", value):
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31 else None


def _note_trace_views(op_range: list[Source], found: list[Source]) -> list[Source]:
    """An era F folder whose trace_view.json is read (an msprof_export source) already holds the Python frames of
    its op_range data: the trace is listed with the op_range source (role trace_view), whose reader then leaves
    its frames out."""
    traces = {s.directory: s.slices["trace_view"][0] for s in found
              if s.family == "msprof_export" and "trace_view" in s.slices}
    for source in op_range:
        if source.directory in traces:
            source.files["trace_view"] = traces[source.directory]
    return op_range


def _memory_home(directory: Path) -> Path:
    """The profiler folder a memory file belongs to: an `*_ascend_ms` folder of MindSpore 2.5+ (it holds
    FRAMEWORK/, PROF_* or profiler_info_<rank>.json), the folder above a 2.3-2.4 `*_ascend_ms` copy folder or above a PROF_* job, else
    the file's own folder (1.x-2.4 flat profiler folder)."""
    for folder in (directory, *directory.parents):
        if folder.name.endswith("_ascend_ms") or is_ascend_result(folder):
            era_f = ((folder / "FRAMEWORK").is_dir() or any(folder.glob("PROF_*"))
                     or any(folder.glob("profiler_info_*.json")))
            return folder if era_f else folder.parent
        if folder.name.startswith("PROF_"):
            return _memory_home(folder.parent) if folder.parent.name.endswith("_ascend_ms") else folder.parent
    return directory


def _add_host_info_file(host_info: dict[tuple[Path, int], Source], directory: Path, filename: str) -> bool:
    """File a MindSpore host info CSV (`host_info/host_info_<id>.csv`) under its host_info folder."""
    match = HOST_INFO_FILE.fullmatch(filename)
    if not match or directory.name != "host_info":
        return False
    rank = int(match.group(1))
    source = host_info.setdefault((directory, rank), Source(
        family="host_info", layout="host_info", rank=rank, device_id=rank, directory=directory))
    source.files[HOST_INFO_ROLE] = directory / filename
    return True


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
    rank_from = "" if rank_match is None else "name" if rank_match.re is _TRACE_NAME_RANK else "file"
    traces.append(Source(family=family, layout=family, rank=rank, device_id=max(rank, 0),
                         directory=directory, files={role: directory / filename}, rank_from=rank_from))
    return True


def _number_traces(traces: list[Source], step_range: str | None) -> list[Source]:
    """Every trace gets the user's step range name (ranks are settled by _apply_rank_map and _rank_unranked)."""
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
                "msprof_export": _numbers_in_name, "minddata": slice_number, "mindspore_memory": _numbers_in_name}


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
    The msprof export of its PROF_* job (`mindstudio_profiler_output/`, kept with data_simplification=False) is
    what MindSpore made ASCEND_PROFILER_OUTPUT from: when the folder has kernel_details.csv or trace_view.json,
    its files are listed with the Ascend source under roles "export:<role>" and not read as a source of their own
    (the reader takes only its msprof_tx CSV from them, which MindSpore does not copy).
    """
    era_f = {}
    for key, source in list(reports.items()):
        if source.layout != "ascend_era_f":
            continue
        if "csv:kernel_details" in source.slices or any(source.directory.glob("PROF_*")):
            era_f[source.directory] = source
        else:
            del reports[key]
    for key, source in list(reports.items()):
        owner = era_f.get(source.directory.parent) if source.layout == "ascend_era_e" else None
        if owner is not None and {"csv:kernel_details", "trace_view"} & owner.slices.keys():
            owner.slices.update({ERA_F_EXPORT_PREFIX + role: paths for role, paths in source.slices.items()})
            del reports[key]
    kept = []
    for source in framework:
        owner = era_f.get(source.directory.parent) if source.layout == "framework" else None
        if owner is None or "trace_view" not in owner.slices:
            kept.append(source)
        else:
            owner.files.update({f"framework:{role}": path for role, path in source.files.items()})
    return kept


# --- the source model: rank identity, MindData owners, superseded msprof copies, captures -----------------

def load_rank_map(path: str | Path) -> list[tuple[str, int]]:
    """Read a --rank-map file: (glob, rank) pairs, in file order (the first that matches a source wins).

    Two spellings: a JSON object {"<path or glob>": <rank>, ...}, or text lines "<path or glob> <rank>"
    (blank lines and lines starting with # are skipped; the rank is the last word, so a path may hold
    spaces). Paths are relative to the analysed folder, use "/" and may use * ? [..] (a * also crosses
    "/"); a pattern names a source when it matches the source's file (one-file sources), its folder,
    or any of its files.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--rank-map {path}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    entries: list[tuple[str, object]] = []
    if text.lstrip().startswith("{"):
        try:
            entries = list(json.loads(text).items())
        except (ValueError, AttributeError) as exc:
            raise UsageError(f"--rank-map {path}: not a JSON object of path: rank ({exc})") from None
    else:
        for number, line in enumerate(text.splitlines(), 1):
            words = line.strip().rsplit(None, 1)
            if not words or words[0].startswith("#"):
                continue
            if len(words) != 2:
                raise UsageError(f"--rank-map {path}, line {number}: expected '<path or glob> <rank>', got {line!r}")
            entries.append((words[0], words[1]))
    mapping = []
    for pattern, rank in entries:
        try:
            value = int(rank) if not isinstance(rank, bool) else None
        except (TypeError, ValueError):
            value = None
        if value is None or not 0 <= value < 1 << 31:
            raise UsageError(f"--rank-map {path}: the rank of {pattern!r} must be a whole number >= 0, got {rank!r}")
        mapping.append((pattern.strip().strip("/").removeprefix("./"), value))
    return mapping


def _location(source: Source) -> Path:
    """Where a source lies: its one file, else its folder."""
    files = source.all_files()
    return files[0][1] if len(files) == 1 else source.directory


def _natural(text: str) -> tuple:
    """Sort key that orders the numbers inside names by value (worker0.9.json before worker0.10.json)."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def _mark_ranks_from_files(sources: list[Source]) -> None:
    """Sources whose rank a file states (profiler_info, info.json) say so; the others took it from a name."""
    for source in sources:
        if {"profiler_info", "device_info"} & (source.files.keys() | source.slices.keys()):
            source.rank_from = "file"


def _apply_rank_map(sources: list[Source], mapping: list[tuple[str, int]], base: Path, warn: Warn) -> None:
    """Give the sources that have no rank the one the --rank-map names for them. A source whose file or
    name gives its rank keeps it; where the map says otherwise, that is reported (conflicting_entry, kept)."""
    if not mapping:
        return
    for source in sources:
        paths = {_location(source), source.directory, *(p for _, p in source.all_files())}
        relative = set()
        for p in paths:
            try:
                relative.add(p.relative_to(base).as_posix())
            except ValueError:
                relative.add(p.as_posix())
        rank = next((rank for pattern, rank in mapping if any(fnmatch.fnmatchcase(r, pattern) for r in relative)),
                    None)
        if rank is None:
            continue
        if source.rank < 0:
            source.rank, source.device_id, source.rank_from = rank, rank, "rank-map"
        elif rank != source.rank:
            location = _location(source)
            warn(f"{location}: --rank-map gives rank {rank}, but its {source.rank_from} says rank {source.rank}; "
                 f"rank {source.rank} kept (the map only ranks sources that name no rank)",
                 check="conflicting_entry", action="kept", path=location)


def _rank_unranked(sources: list[Source]) -> None:
    """A trace without a rank that is the only trace of the input is rank 0, and so is an Ascend result folder that
    names no rank (single-card profiler_info.json) when it is the only one; any other gets a problem. The summaries
    of a folder whose db export names its rank take that rank."""
    summaries = [s for s in sources if s.family == "ascend_summary"]
    ranked = {s.directory: s for s in sources if s.family != "ascend_summary" and s.rank >= 0}
    for source in summaries:  # the summaries of a folder whose export names its rank (a db's RANK_DEVICE_MAP)
        if source.rank < 0 and source.directory in ranked:
            source.rank, source.device_id, source.rank_from = (ranked[source.directory].rank,
                                                               ranked[source.directory].device_id, "file")
    if len(summaries) == 1 and summaries[0].rank < 0:
        summaries[0].rank, summaries[0].device_id, summaries[0].rank_from = 0, 0, "only-source"
    for source in summaries:
        if source.rank < 0:
            source.rank_from = ""
            source.problem = ("cannot tell its rank: no profiler_info_<rank>.json, no rank_id in profiler_info.json and "
                              "no distributed_args.rank in profiler_metadata.json, and it is not the only result folder; "
                              "pass --rank-map FILE with a line '<folder or glob> <rank>' per result folder")
    unranked = [s for s in sources if s.rank < 0 and s.family != "ascend_summary"]
    traces = [s for s in sources if s.family in ("kineto", "nsys", "ascend_db")]
    if len(unranked) == 1 and len(traces) == 1:
        unranked[0].rank, unranked[0].device_id, unranked[0].rank_from = 0, 0, "only-source"
        return
    for source in unranked:
        where = ("no rank in the file name (rank-<n>, worker<n>)" if source.family == "nsys" else
                 "no rank in the file name (ascend_pytorch_profiler_<n>.db), no profiler_info_<n>.json beside "
                 "ASCEND_PROFILER_OUTPUT and none in its RANK_DEVICE_MAP" if source.family == "ascend_db" else
                 "no distributedInfo.rank in the trace and no rank in the file name (rank-<n>, worker<n>)")
        source.rank_from = ""
        source.problem = (f"cannot tell its rank: {where}; name the files by rank, or pass --rank-map FILE with a "
                          "line '<path or glob> <rank>' per trace (paths relative to the input)")


#: Families a MindData log can join: MindSpore's own (the logs are MindSpore's dataset pipeline).
_MINDDATA_OWNERS = ("mindspore_framework", "ascend_raw", "msprof_export", "mindspore_ascend_reports")


def _attach_minddata(minddata: dict[tuple[Path, int], Source], found: list[Source]) -> list[Source]:
    """List MindData logs with the MindSpore / Ascend source of their rank (roles "minddata:<role>"): the
    one whose folder is nearest theirs (same folder, above, below, then the longest shared path), wherever
    it is in the input; one source takes one set of logs. Return the MindData sources that stand alone
    (no such source of their rank, or every one already has logs)."""
    return _attach_side_logs(minddata, found, MINDDATA_ROLE, _MINDDATA_OWNERS)


def _attach_side_logs(logs: dict[tuple[Path, int], Source], found: list[Source], prefix: str,
                      owner_families: tuple[str, ...]) -> list[Source]:
    """List each set of side logs (MindData, host info) with the source of its rank among `owner_families` whose
    folder is nearest theirs (same folder, above, below, then the longest shared path), under roles
    `prefix` + role; one source takes one set. Return the sets that stand alone."""
    alone = []
    for (folder, rank), source in sorted(logs.items(), key=lambda item: _natural(str(item[0][0]))):
        owners = [s for s in found if s.rank == rank and s.family in owner_families
                  and not any(r.startswith(prefix) for r in [*s.files, *s.slices])]
        if not owners:
            alone.append(source)
            continue

        def nearness(owner: Source) -> tuple:
            close = owner.directory in (folder, folder.parent) or folder in owner.directory.parents
            shared = len(os.path.commonpath([owner.directory, folder]).split(os.sep))
            return (not close, -shared, _natural(str(owner.directory)))

        owner = min(owners, key=nearness)
        owner.files.update({prefix + role: path for role, path in source.files.items()})
        owner.slices.update({prefix + role: paths for role, paths in source.slices.items()})
    return alone


def _prof_job(source: Source) -> Path | None:
    """The msprof job folder (PROF_*) that a raw Ascend or msprof export source belongs to: an ancestor
    named PROF_*; for an era F export, its *_ascend_ms folder (which holds the PROF_* job)."""
    if source.family == "msprof_export" and source.layout == "ascend_era_f":
        return source.directory
    for folder in (source.directory, *source.directory.parents):
        if folder.name.startswith("PROF_"):
            return folder
    return None


def _same_job(raw: Path, export: Path) -> bool:
    return raw == export or export in raw.parents


_EXPORT_TASK_MARKERS = (b'"ph": "X"', b'"ph":"X"')


def task_records(source: Source) -> int:
    """A cheap count of the device task records a raw msprof folder or an msprof export holds, to tell the
    more complete of two copies: raw HWTS data: file bytes / 64 (one 64-byte record per task start
    or end) / 2; an export: the data rows of its op summary / kernel_details CSVs, else the complete ("X")
    events of its timeline JSONs. Only sizes are looked at for raw data; export files are scanned in chunks."""
    if source.family == "ascend_raw":
        raw = [p for role in ("hwts", "hwts_c") for p in source.slices.get(role, [])]
        return sum(_file_size(p) for p in raw) // 128
    csvs = [p for role, paths in source.slices.items() if role.startswith("csv:") and "step_trace" not in role
            for p in paths]
    if csvs:
        return sum(max(_count_in(p, (b"\n",)) - 1, 0) for p in csvs)
    return sum(_count_in(p, _EXPORT_TASK_MARKERS) for role, paths in source.slices.items()
               if role in ("msprof", "task_time", "trace_view") for p in paths)


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _count_in(path: Path, needles: tuple[bytes, ...], chunk: int = 1 << 22) -> int:
    """Occurrences of any of `needles` in the file (read in bounded chunks; 0 when unreadable)."""
    count, tail, keep = 0, b"", max(len(n) for n in needles) - 1
    try:
        with open(path, "rb") as handle:
            while block := handle.read(chunk):
                data = tail + block
                count += sum(data.count(n) for n in needles)
                tail = data[-keep:] if keep else b""
                count -= sum(tail.count(n) for n in needles)
    except OSError:
        return 0
    return count


def _supersede_msprof_copies(sources: list[Source]) -> None:
    """Of a raw msprof folder and an export of the same job and rank, keep the one with more task
    records (the raw data on a tie: it holds everything the export was made from); mark the other."""
    raws = [s for s in sources if s.family == "ascend_raw" and _prof_job(s) is not None]
    exports = [s for s in sources if s.family == "msprof_export" and _prof_job(s) is not None]
    for raw in raws:
        for export in exports:
            if raw.rank != export.rank or export.superseded_by or raw.superseded_by \
                    or not _same_job(_prof_job(raw), _prof_job(export)):
                continue
            raw_n, export_n = task_records(raw), task_records(export)
            loser, winner = (export, raw) if raw_n >= export_n else (raw, export)
            loser.superseded_by = _location(winner)
            loser.superseded_why = (f"a more complete copy of the same msprof job and rank: raw data: {raw_n} task records ({_location(raw)}), export: {export_n} "
                                    f"({_location(export)})")


def _supersede_copies(sources: list[Source]) -> None:
    """Of sources of one rank and family whose files hold the same bytes (a trace copied under another name, a
    dump copied into a second folder), keep the first in discover's order and mark the others superseded by it:
    read twice, every op would count twice. Only sizes are compared first; files are opened only where the
    sizes of every role agree (the first and last MiB, then the whole files where they are larger than that)."""
    groups: dict[tuple[object, ...], list[Source]] = {}
    for source in sources:
        if source.superseded_by is None and source.problem is None and source.rank >= 0:
            shape = tuple((role, _file_size(path)) for role, path in source.all_files())
            groups.setdefault((source.rank, source.family, shape), []).append(source)
    for group in groups.values():
        originals: list[Source] = []
        for source in group:
            original = next((o for o in originals if _same_bytes(o, source)), None)
            if original is None:
                originals.append(source)
                continue
            files = source.all_files()
            source.superseded_by = _location(original)
            source.superseded_why = (f"of which it is a copy (the same rank, format and bytes: {len(files)} file"
                                     f"{'s' if len(files) != 1 else ''}, {sum(_file_size(p) for _, p in files)} "
                                     "bytes; read twice, every record would count twice)")


def _same_bytes(first: Source, second: Source) -> bool:
    """True when the files of each role of the two sources (of equal sizes) hold the same bytes."""
    try:
        for (_, a), (_, b) in zip(first.all_files(), second.all_files(), strict=True):
            if a.resolve() == b.resolve():
                continue
            if fingerprint(a) != fingerprint(b):
                return False
            if _file_size(a) > 2 * FINGERPRINT_EDGE and not filecmp.cmp(a, b, shallow=False):
                return False
    except (OSError, ValueError):
        return False
    return True


#: Files that hold a whole run of their format, readable with nothing beside them.
_STAND_ALONE = (*KINETO_SUFFIXES, *NSYS_SUFFIXES)


def _check_stands_alone(path: Path) -> None:
    """Refuse a single file that is part of a dump (not a format that stands alone), naming the folder to
    pass instead. MindData logs, host info files and traces stand alone; other names are left to discover (which finds
    nothing in an unknown file and says so)."""
    name = path.name
    if name.endswith(_STAND_ALONE) or any(p.fullmatch(name) for p in MINDDATA_FILE_PATTERNS.values()) \
            or HOST_INFO_FILE.fullmatch(name):
        return
    folder = None
    if any(p.fullmatch(name) for p in MINDSPORE_FILE_PATTERNS.values()):
        folder = path.parent.parent if path.parent.name == "FRAMEWORK" else path.parent
        kind = "a MindSpore profiler file"
    elif any(p.fullmatch(name) for p in ASCEND_RAW_PATTERNS.values()):
        folder = path.parent.parent if path.parent.name == "data" else path.parent
        prof = next((f for f in (path.parent, *path.parents) if f.name.startswith("PROF_")), None)
        folder, kind = prof or folder, "a raw Ascend profiling file"
    elif (MSPROF_TIMELINE.fullmatch(name) or MSPROF_SUMMARY.fullmatch(name) or MSPROF_OUTPUT.fullmatch(name)
          or MSPROF_PMU_SUMMARY.fullmatch(name) or name in ERA_F_OUTPUT_ROLES
          or name in SUMMARY_FILES and path.parent.name == "ASCEND_PROFILER_OUTPUT"):
        folder = next((f for f in path.parents if f.name.startswith("PROF_") or is_ascend_result(f)),
                      path.parent.parent)
        kind = "an msprof export file"
    elif path.parent.name == "FRAMEWORK" and (name in OP_RANGE_FILES or name in MEMORY_FRAMEWORK_ROLES
                                              or OP_RANGE_RANKED.fullmatch(name)):
        folder, kind = path.parent.parent, "a MindSpore framework data file"
    elif STEP_TRACE_CSV.fullmatch(name) or HCCL_TRACE.fullmatch(name):
        folder = path.parent if STEP_TRACE_CSV.fullmatch(name) else path.parent.parent.parent
        kind = "a MindSpore result file"
    if folder is not None:
        raise UsageError(f"{path}: {kind} does not stand alone (its reader needs the files beside it); "
                         f"pass the folder that holds the dump instead: profpipe analyse {folder}")


def _decompressed_size(path: Path) -> int:
    """A file's size, or for a .gz file the size its gzip trailer records (ISIZE: the uncompressed size modulo
    4 GiB, raised by 4 GiB steps to at least the compressed size, so a lower bound); 0 when it cannot be read."""
    try:
        status = path.stat()
        size = status.st_size
        if not path.name.endswith(".gz") or not stat.S_ISREG(status.st_mode) or size < 18:  # header 10, trailer 8
            return size
        with path.open("rb") as handle:
            handle.seek(-4, os.SEEK_END)
            recorded = int.from_bytes(handle.read(4), "little")
    except OSError:
        return 0
    return recorded + -(-max(0, size - recorded) // 2**32) * 2**32


@dataclass
class LooseFiles:
    """The profiler files directly in one folder (not below it), as discover classifies them: what `profpipe batch`
    needs to tell a folder of runs from a folder that is a run (or whose trace files are runs)."""

    #: Traces that stand alone (Kineto/Paddle JSON, Nsight Systems SQLite exports), each as discover lists it: its
    #: rank is known when rank_from is "file" or "name".
    traces: list[Source] = field(default_factory=list)
    #: Files of the formats whose run is many files (MindSpore, msprof, raw Ascend, MindData, memory, host info).
    others: list[Path] = field(default_factory=list)

    def traces_read_together(self) -> bool:
        """True when `analyse` of the folder reads all its traces as one run: every one has a rank (the ranks and
        profiling cycles of one job), or there is only one."""
        return len(self.traces) == 1 or all(t.rank >= 0 for t in self.traces)


#: Names (not patterns) of the files of a multi-file dump that discover reads.
_NAMED_INPUTS = (*ERA_F_OUTPUT_ROLES, *SUMMARY_FILES, *MEMORY_OUTPUT_ROLES, *MEMORY_FRAMEWORK_ROLES, *OP_RANGE_FILES)


def loose_files(folder: Path) -> LooseFiles:
    """Classify the regular files directly in `folder` (a folder that cannot be listed holds none). Only the first
    bytes of a JSON file whose name does not tell are read (as discover does)."""
    loose = LooseFiles()
    try:
        names = sorted(p.name for p in folder.iterdir() if p.is_file())
    except OSError:
        return loose
    for name in names:
        if name in _NAMED_INPUTS or any(p.fullmatch(name) for p in _INPUT_PATTERNS):
            loose.others.append(folder / name)
        else:
            _add_trace_file(loose.traces, folder, name)
    return loose


def ascend_cluster_ranks(folders: list[Path]) -> list[int]:
    """The ranks of the Ascend result folders among `folders` (the subfolders of one folder) when they are the ranks of
    one run, a cluster: two or more, each rank known (ascend_result_rank) and none twice. Otherwise [] (result folders
    that repeat a rank, e.g. single-card jobs that are each rank 0, are runs of their own)."""
    results = [f for f in folders if is_ascend_result(f)]
    ranks = [ascend_result_rank(f)[0] for f in results]
    return sorted(ranks) if len(ranks) > 1 and min(ranks) >= 0 and len(set(ranks)) == len(ranks) else []


def is_trace_file(path: Path) -> bool:
    """True for a regular file that discover reads as a trace that stands alone (Kineto/Paddle, Nsight Systems)."""
    return path.is_file() and not any(p.fullmatch(path.name) for p in _INPUT_PATTERNS) \
        and _add_trace_file([], path.parent, path.name)


def trace_stem(name: str) -> str:
    """A trace file's name without its trace suffix: rank-0.pt.trace.json.gz -> rank-0, report1.sqlite -> report1."""
    for suffix in (*KINETO_NAMED, *KINETO_SUFFIXES, *NSYS_SUFFIXES):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[:-len(suffix)]
    return name
