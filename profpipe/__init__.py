"""profpipe: offline, batch analysis of deep-learning profiler dumps.

Stages (one module each): discover -> ingest/<family> -> tables (schemas/) -> models (sql/)
-> export/, run end to end by profpipe.run. Public API: `offline_analyse`, `op_analyse`, `search`.
They are imported on first use, so that the command can install its signal handlers before
the heavy libraries load.
"""
from __future__ import annotations

from typing import Any

__all__ = ["offline_analyse", "op_analyse", "search", "__version__"]


def __getattr__(name: str) -> Any:
    if name in ("offline_analyse", "op_analyse", "search"):
        from . import api

        return getattr(api, name)
    if name == "__version__":
        from .version import VERSION

        return VERSION
    raise AttributeError(f"module 'profpipe' has no attribute {name!r}")
