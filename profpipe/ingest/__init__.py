"""Stage 2, ingest: one reader module per format family, each turning a Source into normalized tables."""
from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import replace

import pyarrow as pa

from ..discover import HOST_INFO_PREFIX, MINDDATA_ROLE, Source
from ..health import Warn

#: A reader yields (table name, Arrow table) pieces and reports recoverable problems to `warn`.
Reader = Callable[[Source, Warn], Iterator[tuple[str, pa.Table]]]

#: The source families, each read by the `read` of the module of the same name in this package, and the normalized
#: tables each may write (a run with --select reads only the sources whose tables a selected model reads:
#: `tables_of`; tests/test_select.py checks each module's table names against this). A module is imported when a
#: source of its family is met, so a run loads only the libraries its formats need (polars, for the line readers, is
#: not loaded for PyTorch traces or Nsight exports).
FAMILY_TABLES: dict[str, frozenset[str]] = {family: frozenset(tables.split()) for family, tables in {
    "mindspore_framework": "run_info op_meta host_op device_exec kernel_meta step_point",
    "ascend_raw": "run_info host_op device_exec step_point task_desc op_desc aicpu_exec",
    "mindspore_ascend_reports": "run_info step_point comm_task",
    "msprof_export": "run_info host_op python_frame host_api device_exec step_point comm_task task_desc op_desc "
                     "device_exec_metric l2_cache_task memory_bandwidth pcie_bandwidth",
    "ascend_summary": "run_info ascend_step_summary ascend_comm_op_summary ascend_comm_link_summary ascend_comm_group",
    "minddata": "run_info data_op queue_sample data_cpu_sample data_batch_time",
    "kineto": "run_info host_op python_frame kernel_counter host_api memory_event collective_event device_exec step_point",
    "nsys": "run_info host_op host_api device_exec step_point",
    "mindspore_memory": "run_info memory_block memory_record memory_module static_op_memory memory_graph memory_node "
                        "memory_tensor memory_node_tensor",
    "host_info": "run_info host_info_record",
    "mindspore_op_range": "run_info python_frame host_info_record",
    "ascend_db": "run_info host_op python_frame host_api memory_block memory_record memory_module device_exec "
                 "step_point comm_task task_desc device_exec_metric",
}.items()}
FAMILIES = tuple(FAMILY_TABLES)


def _reader(family: str) -> Reader:
    if family not in FAMILIES:
        raise KeyError(f"no reader for source family {family!r}")
    return importlib.import_module(f"{__name__}.{family}").read


def tables_of(source: Source) -> frozenset[str]:
    """The normalized tables reading `source` may write: its family's and those of its side logs (MindData's,
    MindSpore's host info)."""
    side = {family for prefix, family in ((MINDDATA_ROLE, "minddata"), (HOST_INFO_PREFIX, "host_info"))
            if any(role.startswith(prefix) for role in [*source.files, *source.slices])}
    return FAMILY_TABLES[source.family].union(*(FAMILY_TABLES[family] for family in side))


def read(source: Source, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """Yield (table name, Arrow table) pieces for one source; recoverable problems go to `warn`.

    Side logs listed with another family's source (roles "minddata:<role>", MindData logs; "host_info:<role>",
    MindSpore's host info) are read by their own reader after the family's own files. A source with `wanted` tables
    (--select) yields only those (a reader may also skip their work: the Kineto reader skips Python frames).
    """
    pieces = _pieces(source, warn)
    if source.wanted is None:
        yield from pieces
    else:  # --select: only the tables the run needs (and run_info, which says what the source is)
        yield from ((name, table) for name, table in pieces if name in source.wanted or name == "run_info")


def _pieces(source: Source, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    side = (MINDDATA_ROLE, HOST_INFO_PREFIX)
    own = replace(source, files={r: p for r, p in source.files.items() if not r.startswith(side)},
                  slices={r: p for r, p in source.slices.items() if not r.startswith(side)})
    yield from _reader(source.family)(own, warn)
    for prefix, family in ((MINDDATA_ROLE, "minddata"), (HOST_INFO_PREFIX, "host_info")):
        files = {r.removeprefix(prefix): p for r, p in source.files.items() if r.startswith(prefix)}
        slices = {r.removeprefix(prefix): p for r, p in source.slices.items() if r.startswith(prefix)}
        if files or slices:
            logs = replace(source, family=family, files=files, slices=slices)
            yield from importlib.import_module(f"{__name__}.{family}").read_logs(logs, warn)
