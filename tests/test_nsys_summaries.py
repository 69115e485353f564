"""The nsys stats-style summary marts (issue 20): cuda_api_stats (nsys cuda_api_sum) and gpu_memory_op_stats
(nsys cuda_gpu_mem_time_sum + cuda_gpu_mem_size_sum), checked against values derived independently of
profpipe: plain SQL on the Nsight Systems export's own tables (real exports in ../shared/realdata), and
Python's gzip/json over a real H100 Kineto trace (fixtures/pytorch_cuda). The statistics of the expected
side come from Python's `statistics` module (median; sample stdev, 0 for one value)."""
from __future__ import annotations

import gzip
import json
import math
import re
import sqlite3
import statistics
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest

from conftest import FIXTURES, query, realdata, run

EXPORTS = ["Fuser/report1.sqlite", "WeatherBench2/report1.sqlite"]


def _direct(export: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(f"file:{export}?mode=ro&immutable=1", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _has_table(export: Path, table: str) -> bool:
    return bool(_direct(export, f"SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '{table}'"))


def _nsys_api_name(raw: str) -> str:
    """nsys cuda_api_sum's name rule: a trailing 6-character "_v" + 4 digits is cut, nothing else."""
    return raw[:-6] if len(raw) > 6 and raw[-6:-4] == "_v" and raw[-4:].isdigit() else raw


def _stats(values: list[int]) -> dict:
    return {"total": sum(values), "count": len(values), "avg": statistics.fmean(values),
            "median": float(statistics.median(values)), "min": min(values), "max": max(values),
            "stddev": statistics.stdev(values) if len(values) > 1 else 0.0}


def _close(got: float, want: float) -> bool:
    return math.isclose(got, want, rel_tol=1e-9, abs_tol=0.0) or got == want


def _check_time_stats(row: dict, want: dict, grand_total: int) -> None:
    """A mart row's time columns (names as both marts have them) against the expected group statistics."""
    assert (row["total_ns"], row["min_ns"], row["max_ns"]) == (want["total"], want["min"], want["max"]), row
    for column, key in (("avg_ns", "avg"), ("median_ns", "median"), ("stddev_ns", "stddev")):
        assert _close(row[column], want[key]), (row, column, want[key])
    assert _close(row["time_share"], want["total"] / grand_total), row


def _mart(out: Path, model: str, key: str) -> dict[str, dict]:
    rows = query(out, f"SELECT * FROM {model} WHERE rank = 0")
    names = [r[0] for r in query(out, f"SELECT column_name FROM (DESCRIBE {model})")]
    found = [dict(zip(names, row)) for row in rows]
    assert query(out, f"SELECT DISTINCT rank FROM {model}") in ([(0,)], [])
    return {row[key]: row for row in found}


@pytest.fixture(scope="module")
def analysed(tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """export relative path -> (export file, output folder of `profpipe analyse` on it); skipped without
    ../shared/realdata."""
    found = {}
    for relative in EXPORTS:
        export = realdata(relative)
        out = tmp_path_factory.mktemp("nsys_summaries") / "out"
        found[relative] = (export, run(export, out).output)
    return found


# ---------------------------------------------------------------------------------------------- cuda_api_stats

@pytest.mark.parametrize("relative", EXPORTS)
def test_cuda_api_stats_match_the_exports_runtime_and_driver_tables(analysed, relative):
    export, out = analysed[relative]
    durations: dict[str, list[int]] = {}
    raw_names: dict[str, set[str]] = {}
    for table in ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER"):
        if not _has_table(export, table):
            continue
        for raw, dur in _direct(export, f'SELECT s.value, a."end" - a.start FROM {table} a '
                                        "JOIN StringIds s ON s.id = a.nameId"):
            durations.setdefault(_nsys_api_name(raw), []).append(dur)
            raw_names.setdefault(_nsys_api_name(raw), set()).add(raw)
    assert durations, "the export has runtime calls"
    # profpipe's nsys reader cuts the CUDA version CUPTI appends ("_v" + 4 or 5 digits: _v7000, _v11030) from
    # host_api names, keeping a function's own "_v2" (cuGetProcAddress_v2 is not cuGetProcAddress); nsys cuts
    # only "_v" + 4 digits, so names with a 5-digit version differ; the groups are the same (one to one)
    reader_name = {name: re.sub(r"_v\d{4,5}$", "", next(iter(raws))) for name, raws in raw_names.items()}
    assert all(len(raws) == 1 for raws in raw_names.values())
    assert len(set(reader_name.values())) == len(reader_name)
    differing = {name for name, there in reader_name.items() if there != name}
    assert differing == {
        "Fuser/report1.sqlite": {"cudaGetDeviceProperties_v2_v12000",
                                 "cudaGetDriverEntryPoint_v11030", "cudaOccupancyAvailableDynamicSMemPerBlock_v10200",
                                 "cudaOccupancyMaxActiveClusters_v11070", "cudaStreamIsCapturing_v10000"},
        "WeatherBench2/report1.sqlite": {"cudaGetDeviceProperties_v12000"},
    }[relative]
    rows = _mart(out, "cuda_api_stats", "name")
    assert set(rows) == set(reader_name.values())
    grand_total = sum(sum(values) for values in durations.values())
    for name, values in durations.items():
        row, want = rows[reader_name[name]], _stats(values)
        assert row["calls"] == want["count"], row
        assert row["category"] == "cuda_runtime", row  # nsys records driver calls in its runtime table too
        _check_time_stats(row, want, grand_total)
    assert _close(sum(r["time_share"] for r in rows.values()), 1.0)


# ---------------------------------------------------------------------------------------------- gpu_memory_op_stats

def _copy_kind(enum_name: str) -> str:
    """ENUM_CUDA_MEMCPY_OPER.name (CUDA_MEMCPY_KIND_HTOD, ..._UVM_DTOH, ..._UNKNOWN) -> HtoD, Unified DtoH, Unknown."""
    kind = enum_name.removeprefix("CUDA_MEMCPY_KIND_")
    unified = kind.startswith("UVM_")
    kind = kind.removeprefix("UVM_")
    short = f"{kind[0]}to{kind[3]}" if len(kind) == 4 and kind[1:3] == "TO" else kind.capitalize()
    return ("Unified " if unified else "") + short


@pytest.mark.parametrize("relative", EXPORTS)
def test_gpu_memory_op_stats_match_the_exports_memcpy_and_memset_tables(analysed, relative):
    export, out = analysed[relative]
    groups: dict[str, list[tuple[int, int]]] = {}
    if _has_table(export, "CUPTI_ACTIVITY_KIND_MEMCPY"):
        for enum_name, dur, size in _direct(export, 'SELECT e.name, m."end" - m.start, m.bytes '
                                                    "FROM CUPTI_ACTIVITY_KIND_MEMCPY m "
                                                    "JOIN ENUM_CUDA_MEMCPY_OPER e ON e.id = m.copyKind"):
            groups.setdefault(f"[CUDA memcpy {_copy_kind(enum_name)}]", []).append((dur, size))
    if _has_table(export, "CUPTI_ACTIVITY_KIND_MEMSET"):
        for dur, size in _direct(export, 'SELECT "end" - start, bytes FROM CUPTI_ACTIVITY_KIND_MEMSET'):
            groups.setdefault("[CUDA memset]", []).append((dur, size))
    assert set(groups) == {"Fuser/report1.sqlite": {"[CUDA memcpy HtoD]", "[CUDA memcpy DtoD]", "[CUDA memset]"},
                           "WeatherBench2/report1.sqlite": {"[CUDA memset]"}}[relative]
    _check_memory_ops(_mart(out, "gpu_memory_op_stats", "operation"), groups)


def _check_memory_ops(rows: dict[str, dict], groups: dict[str, list[tuple[int, int]]]) -> None:
    assert set(rows) == set(groups)
    grand_total = sum(dur for executions in groups.values() for dur, _ in executions)
    for operation, executions in groups.items():
        row = rows[operation]
        times, sizes = _stats([d for d, _ in executions]), _stats([b for _, b in executions])
        assert (row["count"], row["sized_count"]) == (times["count"], sizes["count"]), row
        _check_time_stats(row, times, grand_total)
        assert (row["total_bytes"], row["min_bytes"], row["max_bytes"]) == (sizes["total"], sizes["min"], sizes["max"])
        for column, key in (("avg_bytes", "avg"), ("median_bytes", "median"), ("stddev_bytes", "stddev")):
            assert _close(row[column], sizes[key]), (row, column, sizes[key])


# ---------------------------------------------------------------------------------------------- a real Kineto trace

def _ns(microseconds: Decimal) -> int:
    ns = microseconds * 1000
    assert ns == ns.to_integral_value(), microseconds  # Kineto writes µs with 3 decimals: whole ns
    return int(ns)


def test_both_marts_on_a_real_h100_kineto_trace(tmp_path: Path):
    """fixtures/pytorch_cuda (a real H100 trace: runtime and driver calls, HtoD and DtoH copies, memsets),
    the expected values from the raw JSON."""
    trace = FIXTURES / "pytorch_cuda" / "rank-0.pt.trace.json.gz"
    events = json.loads(gzip.decompress(trace.read_bytes()), parse_float=Decimal)["traceEvents"]
    calls: dict[str, list[int]] = {}
    categories: dict[str, str] = {}
    memory: dict[str, list[tuple[int, int]]] = {}
    for event in events:
        if event.get("ph") != "X":
            continue
        if event.get("cat") in ("cuda_runtime", "cuda_driver"):
            calls.setdefault(event["name"], []).append(_ns(event["dur"]))
            categories[event["name"]] = event["cat"]
        elif event.get("cat") == "gpu_memcpy":  # "Memcpy HtoD (Pinned -> Device)" -> [CUDA memcpy HtoD]
            memory.setdefault(f"[CUDA memcpy {event['name'].split()[1]}]", []).append(
                (_ns(event["dur"]), event["args"]["bytes"]))
        elif event.get("cat") == "gpu_memset":
            memory.setdefault("[CUDA memset]", []).append((_ns(event["dur"]), event["args"]["bytes"]))
    assert set(memory) == {"[CUDA memcpy HtoD]", "[CUDA memcpy DtoH]", "[CUDA memset]"}
    assert set(categories.values()) == {"cuda_runtime", "cuda_driver"}

    out = run(trace.parent, tmp_path / "out").output
    api = _mart(out, "cuda_api_stats", "name")
    assert set(api) == set(calls)
    grand_total = sum(sum(values) for values in calls.values())
    for name, values in calls.items():
        want = _stats(values)
        assert (api[name]["calls"], api[name]["category"]) == (want["count"], categories[name]), api[name]
        _check_time_stats(api[name], want, grand_total)
    _check_memory_ops(_mart(out, "gpu_memory_op_stats", "operation"), memory)


# ---------------------------------------------------------------------------------------------- kernel launch args

@pytest.mark.parametrize("relative", EXPORTS)
def test_kernels_keep_their_registers_and_shared_memory(analysed, relative):
    """device_exec's registers_per_thread and shared_memory_bytes per kernel execution equal the export's
    registersPerThread and staticSharedMemory + dynamicSharedMemory (plain SQL on CUPTI_ACTIVITY_KIND_KERNEL)."""
    export, out = analysed[relative]
    if not _has_table(export, "CUPTI_ACTIVITY_KIND_KERNEL"):
        pytest.skip(f"{relative} recorded no kernels")
    expected = Counter(_direct(export, "SELECT start, registersPerThread, staticSharedMemory + dynamicSharedMemory "
                                       "FROM CUPTI_ACTIVITY_KIND_KERNEL"))
    ours = Counter(query(out, "SELECT start_ns, registers_per_thread, shared_memory_bytes FROM device_exec "
                              "WHERE kind = 'kernel'"))
    assert ours == expected and expected
