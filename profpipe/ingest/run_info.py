"""Stage 2, ingest helper: the one run_info row every reader yields first for its source."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from ..discover import Source


def run_info(source: Source, *, device_type: str, framework: str, layout: str, clock: str,
             **columns: object) -> pa.Table:
    """The run_info row of `source`; `columns` are its optional columns (metadata_json, tick_hz, pid, ...),
    the ones left out are null (tables.conform types and checks the row).

    `clock` is one of profpipe.clocks.CLOCKS; the clock helpers there (epoch_clock, kineto_clock,
    msprof_clock, ...) give `clock` with the epoch_offset_ns / epoch_offset_uncertainty_ns and
    host_epoch_offset_ns columns that the source's dump allows."""
    return pa.table({
        "rank": [source.rank], "device_id": [source.device_id], "device_type": [device_type], "framework": [framework],
        "layout": [layout], "source_dir": [str(source.directory)], "clock": [clock],
        **{name: [value] for name, value in columns.items()},
    })


def ascend_framework(profiler_info: object, folder: Path) -> str:
    """The framework that wrote an Ascend result folder (formats-ascend-today.md §1): 'pytorch' for torch_npu's (its
    profiler_info JSON has a config.common_config or a torch_npu_version, or the folder is named `*_ascend_pt`),
    else 'mindspore'."""
    info = profiler_info if isinstance(profiler_info, dict) else {}
    config = info.get("config")
    torch = (isinstance(config, dict) and "common_config" in config) or "torch_npu_version" in info
    return "pytorch" if torch or folder.name.endswith("_ascend_pt") else "mindspore"
