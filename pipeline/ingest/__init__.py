"""Stage 2, ingest: one reader module per format family, each turning a Source into normalized tables."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

import pyarrow as pa

from ..discover import MINDDATA_ROLE, Source
from . import ascend_raw, kineto, mindspore_ascend_reports, mindspore_framework, minddata, msprof_export, nsys
from .binary_records import Warn

#: A reader yields (table name, Arrow table) pieces and reports recoverable problems to `warn`.
Reader = Callable[[Source, Warn], Iterator[tuple[str, pa.Table]]]

READERS: dict[str, Reader] = {
    "mindspore_framework": mindspore_framework.read,
    "ascend_raw": ascend_raw.read,
    "mindspore_ascend_reports": mindspore_ascend_reports.read,
    "msprof_export": msprof_export.read,
    "minddata": minddata.read,
    "kineto": kineto.read,
    "nsys": nsys.read,
}


def read(source: Source, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """Yield (table name, Arrow table) pieces for one source; recoverable problems go to `warn`.

    MindData logs listed with another family's source (roles "minddata:<role>") are read by the
    MindData reader after the family's own files.
    """
    own = replace(source, files={r: p for r, p in source.files.items() if not r.startswith(MINDDATA_ROLE)},
                  slices={r: p for r, p in source.slices.items() if not r.startswith(MINDDATA_ROLE)})
    yield from READERS[source.family](own, warn)
    if own.files != source.files or own.slices != source.slices:
        logs = replace(source, family="minddata",
                       files={r.removeprefix(MINDDATA_ROLE): p for r, p in source.files.items() if r not in own.files},
                       slices={r.removeprefix(MINDDATA_ROLE): p for r, p in source.slices.items() if r not in own.slices})
        yield from minddata.read_logs(logs, warn)
