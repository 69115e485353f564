"""Stage 2, ingest: one reader module per format family, each turning a Source into normalized tables."""
from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa

from ..discover import Source
from . import ascend_raw, mindspore_ascend_reports, mindspore_framework, msprof_export
from .binary_records import Warn

#: A reader yields (table name, Arrow table) pieces and reports recoverable problems to `warn`.
Reader = Callable[[Source, Warn], Iterator[tuple[str, pa.Table]]]

READERS: dict[str, Reader] = {
    "mindspore_framework": mindspore_framework.read,
    "ascend_raw": ascend_raw.read,
    "mindspore_ascend_reports": mindspore_ascend_reports.read,
    "msprof_export": msprof_export.read,
}


def read(source: Source, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """Yield (table name, Arrow table) pieces for one source; recoverable problems go to `warn`."""
    return READERS[source.family](source, warn)
