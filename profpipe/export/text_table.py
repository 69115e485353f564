"""Plain-text tables in the layout MindSpore's Ascend text reports use (the "simple" table style).

Columns are two spaces apart and underlined with dashes; a column of numbers is right-aligned
on the decimal point (floats printed with %g), any other column is left-aligned; a column is
at least two characters wider than its header. Trailing blanks are trimmed from every line.
"""
from __future__ import annotations

from collections.abc import Sequence

Cell = str | int | float | None


def simple_table(headers: Sequence[str], rows: Sequence[Sequence[Cell]]) -> str:
    """Render `rows` under `headers`; None cells are blank."""
    columns = list(zip(*rows)) if rows else [() for _ in headers]
    rendered = [_render_column(header, column) for header, column in zip(headers, columns)]
    lines = ["  ".join(cells[i] for cells in rendered).rstrip() for i in range(len(rows) + 2)]
    return "\n".join(lines)


def _render_column(header: str, values: Sequence[Cell]) -> list[str]:
    present = [v for v in values if v is not None and v != ""]
    numeric = bool(present) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present)
    if not numeric:
        texts = ["" if v is None else str(v) for v in values]
        width = max([len(header) + 2] + [len(t) for t in texts])
        return [header.ljust(width), "-" * width] + [t.ljust(width) for t in texts]
    texts = ["" if v is None or v == "" else (format(v, "g") if isinstance(v, float) else str(v)) for v in values]
    decimals = [len(t) - t.index(".") - 1 if "." in t else -1 for t in texts]
    most = max(decimals)
    padded = [t + " " * (most - d) if t else t for t, d in zip(texts, decimals)]
    width = max([len(header) + 2] + [len(t) for t in padded])
    return [header.rjust(width), "-" * width] + [t.rjust(width) for t in padded]
