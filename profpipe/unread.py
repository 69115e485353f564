"""What a run saw and did not read: the files of known profilers that no source holds, and the "nothing was read"
message. Called by run.py between discover and the trace-health ledger (discover's walk stays as it is).

The inventory is one list (KINDS): each kind of file a known profiler writes that profpipe may leave unread, with
whether it is *redundant* (the profiler's own summary or another copy of data profpipe reads beside it: op_statistic,
step_trace_time, an msprof .db beside the text export, the raw PROF_* data below an export) and why profpipe does
not read it (or how to turn it into something profpipe reads). It is taken from the files discover's walk met (the
input is walked once). A file of a kind no source holds is

* silent when it is redundant and its result folder (its *home*) holds a source: nothing is lost (a source there
  that fails is a source_failed row of its own);
* a trace_health row (`unread_file`, `source_skipped`: exit 3) naming the files otherwise;
* named in the error (exit 1) of a run that read no event (see `nothing_read`), with the failed sources, the
  sources that gave no rows and the ledger's lossy rows.

Metadata (info.json, start_info, profiler_info, logs, `.done` marks) is no kind: it is never data on its own.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .discover import Source, is_ascend_result
from .health import HealthEvent, HealthLedger

#: The tables that describe rather than record: a run whose other tables hold no row read no event (exit 1).
#: Every other normalized table (device_exec, host_op, comm_task, step_point, memory_*, queue_sample, ...) counts, and
#: so do task_desc and op_desc: a compiled graph's description alone is what MindSpore's framework_raw report shows
#: (MindInsight's real JOB4 and container sets hold nothing else).
DESCRIPTIVE_TABLES = frozenset({"run_info", "op_meta", "kernel_meta", "trace_health"})


@dataclass(frozen=True)
class Kind:
    """A kind of file of a known profiler that profpipe may not read."""

    name: str
    #: Matched against the file's path relative to the input, with a leading "/" (so `/NAME/` anchors a folder).
    pattern: re.Pattern[str]
    #: The profiler's own summary, or another copy, of data profpipe reads from the same result folder.
    redundant: bool
    #: Why profpipe does not read it, and what to do instead.
    why: str
    #: Redundant with what any source of the run gives, not only one of its own result folder (MindSpore's reports
    #: and their copies, which tests and users keep in folders of their own).
    run_wide: bool = False
    #: Suffixes of the export that replaces the file (report1.nsys-rep -> report1.sqlite): a file whose export beside
    #: it is held is left alone.
    exported_as: tuple[str, ...] = ()


def _kind(name: str, pattern: str, redundant: bool, why: str, run_wide: bool = False,
          exported_as: tuple[str, ...] = ()) -> Kind:
    return Kind(name, re.compile(pattern), redundant, why, run_wide, exported_as)


_OUTPUT = r"/ASCEND_PROFILER_OUTPUT/"
_DERIVED_OUTPUT = (r"op_statistic|operator_details|step_trace_time|api_statistic|communication(?:_matrix)?|"
                   r"trace_view|analysis")
_PROF = r"/PROF_[^/]+/"
#: The first kind whose pattern matches a file is its kind.
KINDS: tuple[Kind, ...] = (
    _kind("Ascend result summary", rf"{_OUTPUT}(?:{_DERIVED_OUTPUT})\.(?:csv|json|db)$", True,
          "the profiler's summary of the kernel, trace and communication data beside it, which profpipe recomputes "
          "(step_trace_time, communication*.json and analysis.db are read as the tool's own numbers: ascend_summary)"),
    _kind("Ascend db export", rf"{_OUTPUT}ascend_(?:pytorch|mindspore)_profiler(?:_\d+)?\.db$", True,
          "a db export that no source holds: the text export beside it is read instead (the db holds no task)"),
    _kind("Ascend result file", rf"{_OUTPUT}[^/]+$", False,
          "a file of ASCEND_PROFILER_OUTPUT/ of a kind profpipe does not read"),
    _kind("msprof db", rf"{_PROF}(?:.*/)?msprof_\d+\.db$", True,
          "msprof's unified db that no source holds: the export or the result folder around it is read instead"),
    _kind("msprof summary", rf"{_PROF}(?:.*/)?(?:mindstudio_profiler_output|summary)/"
                            r"(?:op_statistic|api_statistic|task_time|communication_statistic|fusion_op|prof_rule|"
                            r"ai_core_utilization|aicpu|op_summary|step_trace)[^/]*\.(?:csv|json)$", True,
          "msprof's summary of the data beside it, which profpipe recomputes"),
    _kind("msprof export file", rf"{_PROF}(?:.*/)?(?:mindstudio_profiler_output|summary|timeline)/[^/]+\.(?:csv|json)$",
          False, "an msprof export file of a kind profpipe does not read"),
    _kind("msprof raw data", rf"{_PROF}(?:device_\d+|host)/data/[^/]+$", True,
          "raw CANN data of a kind profpipe does not read (or whose export was read instead); export it with "
          "`msprof --export=on --output=<PROF_ folder>` to read its mindstudio_profiler_output/"),
    _kind("MindSpore framework data", r"/FRAMEWORK/[^/]+$", True,
          "MindSpore's raw framework data of a kind profpipe does not read (or whose export beside it was read)"),
    _kind("Nsight Systems report", r"\.(?:nsys-rep|qdrep)$", False,
          "the binary report is not read: export it with `nsys export --type sqlite --output <name>.sqlite "
          "<report>` and analyse the .sqlite", exported_as=(".sqlite", ".sqlite3")),
    _kind("Nsight Compute report", r"\.ncu-rep$", False,
          "Nsight Compute's per-kernel report is not read (profpipe reads Nsight Systems' SQLite export)"),
    _kind("MindSpore report", r"/(?:aicore_intermediate|framework_raw|output_timeline_data|output_op_compute_time|"
                              r"ascend_timeline_display|ascend_timeline_summary|gpu_timeline_display|"
                              r"timeline_display|timeline_summary|flops|flops_summary|hccl_raw|"
                              r"minddata_pipeline_raw|minddata_pipeline_summary|op_intermediate|"
                              r"ascend_cluster_analyse)_[^/]*\.(?:csv|txt|json)$", True,
          "MindSpore's own report of the raw data, which profpipe recomputes", run_wide=True),
)
#: Names that are never data on their own: run metadata and the profiler's marks.
_METADATA = re.compile(r"(?:.*\.done|info\.json(?:\.\d+)?|(?:start|end)_info(?:\.\d+)?|host_start\.log|"
                       r"profiler_info(?:_\d+)?\.json|profiler_metadata\.json|.*\.log)$")


@dataclass
class Unread:
    """The files of one kind in one result folder that no source holds."""

    kind: Kind
    home: Path
    files: list[Path]

    def sentence(self, root: Path) -> str:
        names = ", ".join(_shown(path, root) for path in self.files[:4])
        more = f" and {len(self.files) - 4} more" if len(self.files) > 4 else ""
        plural = "s" if len(self.files) > 1 else ""
        return f"{len(self.files)} {self.kind.name} file{plural} ({names}{more}): {self.kind.why}"


def inventory(root: Path, sources: Sequence[Source], seen: Iterable[Path]) -> list[Unread]:
    """The files of known kinds among `seen` (the files discover's walk of `root` met) that none of `sources` holds,
    by home and kind (in path order). Paths are compared as the walk made them (discover builds the sources' paths
    from the same walk): no file is opened or resolved."""
    held = {path for source in sources for _, path in source.all_files()}
    base = root if root.is_dir() else root.parent
    homes: dict[Path, Path] = {}
    found: dict[tuple[Path, str], Unread] = {}
    for path in sorted(seen):
        if _METADATA.fullmatch(path.name):
            continue
        relative = "/" + path.relative_to(base).as_posix()
        kind = next((k for k in KINDS if k.pattern.search(relative)), None)
        if kind is None or path in held or any(path.with_suffix(suffix) in held for suffix in kind.exported_as):
            continue
        if path.parent not in homes:
            homes[path.parent] = _home(path.parent, base)
        home = base if kind.run_wide else homes[path.parent]
        found.setdefault((home, kind.name), Unread(kind, home, [])).files.append(path)
    return list(found.values())


def _home(folder: Path, base: Path) -> Path:
    """The result folder of the files of `folder`: the outermost Ascend result or PROF_* folder at or above it inside
    the input, else `folder` itself."""
    home = folder
    for above in (folder, *folder.parents):
        if not above.is_relative_to(base):
            break
        if above.name.startswith("PROF_") or is_ascend_result(above):
            home = above
    return home


def report_unread(unread: Iterable[Unread], sources: Sequence[Source], root: Path, health: HealthLedger) -> None:
    """A trace_health row (unread_file, source_skipped) for each group of files that holds data no source gives: not
    redundant, or redundant in a home that holds no source (a source there that fails is a row of its own)."""
    for group in unread:
        if group.kind.redundant and _home_read(group.home, sources):
            continue
        health.add(HealthEvent(source=str(group.home), rank=-1, check="unread_file", action="source_skipped",
                               message=f"not read: {group.sentence(root)}", rows=len(group.files),
                               path=str(group.files[0]), example=group.files[0].name))


def _home_read(home: Path, sources: Sequence[Source]) -> bool:
    return any(path.is_relative_to(home) for source in sources for _, path in source.all_files())


def nothing_read(root: Path, unread: Sequence[Unread], failed: Sequence[str], empty: Sequence[Source],
                 health: HealthLedger) -> str:
    """The message of a run that read no event: what it found and why none of it gave a row: the files of known
    kinds not read and why (`unread`, or the ledger's unread_file rows), the errors of the sources that `failed`, the
    sources read that gave no rows (`empty`) and the ledger's other lossy rows."""
    lines = [f"{root}: read no event" + ("; every source failed to read" if failed and not empty else "")]
    by_kind: dict[str, Unread] = {}
    for group in unread:  # one line per kind, whatever the homes
        by_kind.setdefault(group.kind.name, Unread(group.kind, root, [])).files.extend(group.files)
    named = [f"{group.sentence(root)}" for group in by_kind.values()] + [
        event.message.removeprefix("not read: ") for event in health.events if event.check == "unread_file"]
    if named:
        lines.append("found files that profpipe does not read:")
        lines += [f"  {sentence}" for sentence in named]
    if failed:
        lines.append("found sources that could not be read:")
        lines += [f"  {error}" for error in failed]
    if empty:
        lines.append("read these sources, which gave no event:")
        lines += [f"  {s.family}: {', '.join(_shown(p, root) for _, p in s.all_files()[:4])}" for s in empty]
    lossy = [event for event in health.lossy if event.check not in ("unread_file", "source_failed")]
    if lossy:
        lines.append("what the readers left out:")
        lines += [f"  {event.message}" for event in lossy[:8]]
    return "\n".join(lines)


def _shown(path: Path, root: Path) -> str:
    base = root if root.is_dir() else root.parent
    return path.relative_to(base).as_posix() if path.is_relative_to(base) else str(path)
