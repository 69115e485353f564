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

#: The source families, each read by the `read` of the module of the same name in this package. A module
#: is imported when a source of its family is met, so a run loads only the libraries its formats need
#: (polars, for the line readers, is not loaded for PyTorch traces or Nsight exports).
FAMILIES = ("mindspore_framework", "ascend_raw", "mindspore_ascend_reports", "msprof_export", "ascend_summary", "minddata",
            "kineto", "nsys", "mindspore_memory", "host_info", "mindspore_op_range", "ascend_db")


def _reader(family: str) -> Reader:
    if family not in FAMILIES:
        raise KeyError(f"no reader for source family {family!r}")
    return importlib.import_module(f"{__name__}.{family}").read


def read(source: Source, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """Yield (table name, Arrow table) pieces for one source; recoverable problems go to `warn`.

    Side logs listed with another family's source (roles "minddata:<role>", MindData logs; "host_info:<role>",
    MindSpore's host info) are read by their own reader after the family's own files.
    """
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
