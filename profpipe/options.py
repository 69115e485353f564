"""The options of one analysis: one typed, validated object, built once by the CLI or the Python API and
read by every stage (discover, ingest, step filter, models, exports).

Defaults follow MindSpore's `Profiler.offline_analyse` and `Profiler(...)` arguments where they have a
counterpart; the FP/BP overrides fall back on MindSpore's environment variables when `resolved()` is
called, once, at the start of a run.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import UsageError

if TYPE_CHECKING:
    from .models import Selection

#: Which MindSpore version the compatible reports imitate (docs/mindspore.md, "Ascend reports").
REPORT_STYLES = ("latest", "legacy")
SUBGRAPHS = ("all", "Default", "Gradients")
#: MindSpore's Profiler(timeline_limit=500): the timeline's default cap in MiB.
DEFAULT_TIMELINE_LIMIT_MB = 500.0
#: What the timeline may hold (Options.timeline).
TIMELINES = ("auto", "full", "summary", "none")
#: The mart the timeline is written from (profpipe/export/chrome_trace.py): built with a selection that asks for a
#: timeline.
TIMELINE_MART = "timeline_span"


@dataclass(frozen=True)
class ReportOptions:
    """MindSpore's Profiler arguments for the compatible reports, and the version they imitate."""

    #: "latest" MindSpore behaviour or "legacy" (Ascend: MindSpore r0.5-r1.0 layouts; MindData: 1.x files).
    style: str = "latest"
    #: Ascend op detail report: all, Default or Gradients ops.
    subgraph: str = "all"
    #: Ascend op detail report: only these op types (empty: all).
    optypes_to_deal: tuple[str, ...] = ()
    #: Ascend op detail report: op types left out.
    optypes_not_deal: tuple[str, ...] = ("Variable",)
    #: Ascend op detail report: add the full op name column.
    show_op_path: bool = False

    def __post_init__(self) -> None:
        if self.style not in REPORT_STYLES:
            raise UsageError(f"report style must be one of {', '.join(REPORT_STYLES)}, got {self.style!r}")
        if self.subgraph not in SUBGRAPHS:
            raise UsageError(f"subgraph must be one of {', '.join(SUBGRAPHS)}, got {self.subgraph!r}")


@dataclass(frozen=True)
class Options:
    """Every choice of one analysis. Build it with keyword arguments; it checks itself."""

    #: Only these ranks (None: every rank found).
    ranks: tuple[int, ...] | None = None
    #: Only these consecutive steps, as MindSpore's step_list (None: all). A step outside the data is an error.
    step_list: tuple[int, ...] | None = None
    #: MindSpore's data_simplification: True keeps the deliverables only (the normalized tables live in
    #: profile.duckdb); False also keeps them as Parquet files under tables/.
    data_simplification: bool = True
    #: Indent the JSON reports.
    pretty: bool = False
    #: Cap timeline/trace.json at this many MiB, as MindSpore's timeline_limit (default 500, MindSpore's: a default
    #: run keeps a multi-GB input's timeline openable in a browser); None or 0: no cap.
    timeline_limit_mb: float | None = DEFAULT_TIMELINE_LIMIT_MB
    #: What timeline/trace.json holds: "full" (every lane), "summary" (the steps, their phases and the overlap
    #: analysis: what profpipe adds to a trace), "none" (no timeline), or "auto": "summary" for an input that is one
    #: rank's Chrome trace (PyTorch or Paddle: it opens in Perfetto as it is), "full" for every other input.
    timeline: str = "auto"
    #: Write the timeline gzip-compressed, as timeline/trace.json.gz (Perfetto and chrome://tracing open it): True,
    #: False, or None: when its text passes GZIP_TIMELINE_FROM_MB (profpipe/export/chrome_trace.py).
    timeline_gzip: bool | None = None
    #: Write report.html (the visual report, profpipe/report) into the output; a batch writes its warehouse's. None:
    #: written unless `select` is given (a selection writes the exports it asks for only).
    visual_report: bool | None = None
    #: Build only these models and what they read (dbt's --select: MODEL, +MODEL, MODEL+ for its downstream too; items
    #: may hold several names separated by commas or spaces); None: every model. profpipe/models.py `select`.
    select: tuple[str, ...] | None = None
    #: msprof exports: read only these model (graph) ids (None: per rank, the model with most files).
    msprof_models: tuple[int, ...] | None = None
    #: PyTorch traces, Nsight Systems exports, msprof exports and raw PROF folders: the annotation, NVTX range or MSTX
    #: range that marks a step.
    step_range_name: str | None = None
    #: Full names of the ops that start forward and end backward propagation (None: the step trace's,
    #: or MindSpore's environment variables FP_POINT / PROFILING_FP_START and BP_POINT / PROFILING_BP_END).
    fp_op: str | None = None
    bp_op: str | None = None
    #: The device's peak in TFLOP/s that op_flops compares achieved FLOP/s with (None: from the trace's
    #: deviceProperties name and the op's input type, where macro gpu_peak_tflops knows the device).
    peak_tflops: float | None = None
    #: A file giving traces without a rank of their own their rank (discover.load_rank_map).
    rank_map: Path | None = None
    #: Worker processes that read the sources (None: one per core when the input is large enough to pay
    #: for starting them, fewer when memory cannot hold one largest source per worker; 1: in this process).
    workers: int | None = None
    #: MiB of memory each DuckDB database of the run may hold before it spills to disk (the output's, each reader's;
    #: None: DuckDB's default, 80 % of the machine's memory, and 640 MiB for a reader).
    memory_limit_mb: int | None = None
    #: Make any data loss fatal (exit 1, the earlier output kept).
    strict: bool = False
    #: Let the output replace a non-empty folder profpipe did not write (never one that holds the input).
    force: bool = False
    report: ReportOptions = field(default_factory=ReportOptions)

    def __post_init__(self) -> None:
        if self.select is not None:
            items = (self.select,) if isinstance(self.select, str) else self.select
            if not all(isinstance(item, str) for item in items):
                raise UsageError(f"select must be model names, got {self.select!r}")
            object.__setattr__(self, "select", tuple(items))
        for name in ("ranks", "step_list", "msprof_models"):
            value = getattr(self, name)
            if value is not None:
                if isinstance(value, (str, bytes)) or not all(isinstance(v, int) and not isinstance(v, bool)
                                                              for v in value):
                    raise UsageError(f"{name} must be a list of integers, got {value!r}")
                object.__setattr__(self, name, tuple(value))
        if self.step_list is not None:
            steps = sorted(self.step_list)
            if not steps or steps[0] < 1 or steps != list(range(steps[0], steps[0] + len(steps))):
                raise UsageError(f"step_list must be consecutive step numbers starting at 1 or later, "
                                 f"got {list(self.step_list)}")
            object.__setattr__(self, "step_list", tuple(steps))
        if self.timeline_limit_mb is not None:
            if (isinstance(self.timeline_limit_mb, bool) or not isinstance(self.timeline_limit_mb, (int, float))
                    or not math.isfinite(self.timeline_limit_mb) or self.timeline_limit_mb < 0):
                raise UsageError(f"timeline limit must be a positive number of MiB (0: no limit), "
                                 f"got {self.timeline_limit_mb!r}")
            object.__setattr__(self, "timeline_limit_mb", float(self.timeline_limit_mb) or None)
        if self.timeline not in TIMELINES:
            raise UsageError(f"timeline must be one of {', '.join(TIMELINES)}, got {self.timeline!r}")
        if self.peak_tflops is not None and (isinstance(self.peak_tflops, bool) or not isinstance(self.peak_tflops, (int, float))
                                             or not math.isfinite(self.peak_tflops) or self.peak_tflops <= 0):
            raise UsageError(f"peak TFLOP/s must be a positive number, got {self.peak_tflops!r}")
        if self.rank_map is not None:
            object.__setattr__(self, "rank_map", Path(self.rank_map))
        if self.workers is not None and (isinstance(self.workers, bool) or not isinstance(self.workers, int)
                                         or self.workers < 1):
            raise UsageError(f"workers must be a whole number of at least 1, got {self.workers!r}")
        if self.memory_limit_mb is not None and (isinstance(self.memory_limit_mb, bool)
                                                 or not isinstance(self.memory_limit_mb, int)
                                                 or self.memory_limit_mb < 64):
            raise UsageError(f"memory limit must be a whole number of MiB, at least 64, got {self.memory_limit_mb!r}")

    def resolved(self) -> Options:
        """These options with the FP/BP overrides taken from MindSpore's environment variables where
        not given, the rank map and the selection's model names checked, and whether to write report.html decided."""
        if self.rank_map is not None and not self.rank_map.is_file():
            raise UsageError(f"--rank-map {self.rank_map}: no such file")
        self.selection  # noqa: B018 - a model name that is no model is a usage error before the run starts
        return replace(self, visual_report=self.select is None if self.visual_report is None else self.visual_report,
                       fp_op=self.fp_op or os.environ.get("FP_POINT") or os.environ.get("PROFILING_FP_START"),
                       bp_op=self.bp_op or os.environ.get("BP_POINT") or os.environ.get("PROFILING_BP_END"))

    @cached_property
    def selection(self) -> Selection | None:
        """The models and tables `select` builds (None: every model); with the timeline asked for (`timeline` full or
        summary), the mart it is written from too. Computed once per Options (a batch asks for it per run)."""
        from .models import select

        if self.select is None:
            return None
        return select(self.select + ((TIMELINE_MART,) if self.timeline in ("full", "summary") else ()))

    @property
    def model_options(self) -> dict[str, str]:
        """The run_option rows the models read: fp_op / bp_op (the step models), peak_tflops (op_flops) where set."""
        return {name: str(value) for name, value in (("fp_op", self.fp_op), ("bp_op", self.bp_op),
                                                     ("peak_tflops", self.peak_tflops)) if value}
