"""profpipe: offline, batch analysis of deep-learning profiler dumps.

Stages (one module each): discover -> ingest/<family> -> tables (schemas/) -> models (sql/)
-> export/, run end to end by pipeline.run. Public API: `offline_analyse`, `op_analyse`.
"""
from .api import offline_analyse, op_analyse
from .run import VERSION as __version__

__all__ = ["offline_analyse", "op_analyse", "__version__"]
