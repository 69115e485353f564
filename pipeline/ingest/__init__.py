"""Stage 2, ingest: one reader module per format family, each turning a Source into normalized tables."""
from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa

from ..discover import Source
from . import mindspore_framework

Reader = Callable[[Source], Iterator[tuple[str, pa.Table]]]

READERS: dict[str, Reader] = {
    "mindspore_framework": mindspore_framework.read,
}


def read(source: Source) -> Iterator[tuple[str, pa.Table]]:
    """Yield (table name, Arrow table) pieces for one source."""
    return READERS[source.family](source)
