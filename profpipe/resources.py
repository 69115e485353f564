"""Where the packaged data lives: `schemas/` and `sql/`.

In a wheel they are copied to `profpipe/_data/`; in a source checkout or an editable
install they stay at the repository root. Every other module asks here instead of
building paths itself.
"""
from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Return the folder `name` ("schemas" or "sql") wherever this install keeps it."""
    for candidate in (_PACKAGE_DIR / "_data" / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"profpipe data folder {name!r} is missing from this install")
