"""Nsight Systems SQLite exports: tables, NVTX nesting and kernel links, steps, missing tables, bad input.

Oracle: the SQLite file itself, queried here directly with Python's sqlite3 (fixtures/nsys from
fixtures/generators/nsys.py, whose numbers are also worked out by hand; the real NVIDIA/Fuser and
WeatherBench2 exports in ../shared/realdata).
"""
from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from conftest import FIXTURES, assert_generator_reproduces, query, realdata, run
from profpipe.errors import InputError, NoProfilerData

NSYS = FIXTURES / "nsys"
MS = 1_000_000
STEP_1 = 1_000 * MS


def _direct(path: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True) as db:
        return db.execute(sql).fetchall()


def _kernel_totals(path: Path) -> dict[str, tuple[int, int, int, int]]:
    """Per demangled name: instances, total, min and max duration, straight from the export."""
    rows = _direct(path, "SELECT s.value, count(*), sum(k.end - k.start), min(k.end - k.start), max(k.end - k.start) "
                         "FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName GROUP BY 1")
    return {name: tuple(values) for name, *values in rows}


def test_generator_reproduces(tmp_path: Path):
    assert_generator_reproduces("nsys.py", NSYS, tmp_path)


def test_fixture_tables(tmp_path: Path):
    out = run(NSYS, tmp_path / "out", step_range_name="train_step").output
    device = query(out, "SELECT kind, name, op_name, start_ns - 1000000000, dur_ns, stream_id, device_id, grid, block, "
                        "bytes FROM device_exec WHERE start_ns < 1010000000 ORDER BY start_ns")
    gemm = "void gemm_kernel<float, 128>(float const*, float*)"
    assert device == [
        ("memcpy", "[CUDA memcpy Host-to-Device]", "DataLoader", 300_000, 200_000, 7, 0, None, None, 1_048_576),
        ("kernel", gemm, "aten::linear", 2_500_000, MS, 7, 0, "4,1,1", "128,1,1", None),
        ("kernel", gemm, "LinearBackward0", 5 * MS, 1_500_000, 7, 0, "8,2,1", "128,1,1", None),
        ("memset", "[CUDA memset]", "optimizer", 7_700_000, 10_000, 7, 0, None, None, 4096),
        ("sync", "[CUDA Stream sync]", "train_step 1", 9 * MS, 500_000, 7, 0, None, None, None)]
    # runtime names lose their version suffix; the other process's call (correlation 2) is read but launches nothing
    calls = query(out, "SELECT name, count(*) FROM host_api GROUP BY name ORDER BY name")
    assert calls == [("cudaGetDevice", 1), ("cudaLaunchKernel", 4), ("cudaMemcpyAsync", 2), ("cudaMemsetAsync", 2),
                     ("cudaStreamSynchronize", 2)]
    # NVTX ranges nest per thread; emit_nvtx details are cut from the names; the mark is no range
    ops = query(out, "SELECT o.op_name, o.category, p.op_name FROM host_op o LEFT JOIN host_op p "
                     "ON p.op_index = o.parent_index WHERE o.start_ns >= 1010000000 ORDER BY o.op_index")
    assert ops == [("train_step 2", "nvtx", None), ("registered range", "nvtx", "train_step 2"),
                   ("DataLoader", "dataloader", "train_step 2"), ("forward", "forward", "train_step 2"),
                   ("aten::linear", "nvtx", "forward"), ("backward", "backward", "train_step 2"),
                   ("LinearBackward0", "nvtx", "backward"), ("optimizer", "optimizer", "train_step 2")]
    info = query(out, "SELECT framework, layout, clock, device_type, metadata_json->>'session_start_utc_ns', "
                      "metadata_json->>'schema_version' FROM run_info")
    assert info == [("nsight_systems", "nsys", "nsys_session", "gpu", "1767225600000000000", "3.17.1")]


def test_steps_from_the_named_nvtx_ranges(tmp_path: Path):
    out = run(NSYS, tmp_path / "out", step_range_name="train_step").output
    phases = query(out, "SELECT step, start_ns, fp_ns, bp_ns, end_ns, fp_op, bp_op FROM step_phases ORDER BY step")
    assert phases == [(n, STEP_1 + (n - 1) * 10 * MS, STEP_1 + (n - 1) * 10 * MS + 2 * MS,
                       STEP_1 + (n - 1) * 10 * MS + 7 * MS, STEP_1 + n * 10 * MS, "forward", "backward") for n in (1, 2)]
    gpu = query(out, "SELECT compute_ns, memcpy_ns, memset_ns, busy_ns, idle_ns, kernels, launch_delay_avg_ns, "
                     "launch_delay_max_ns, dataloader_ns, forward_ns, backward_ns, optimizer_ns, host_sync_ns "
                     "FROM step_gpu_time")
    # kernels 1.0 + 1.5 ms; copy 0.2; memset 0.01; idle: the GPU window (what the step launched: the copy's start at
    # 0.3 ms to the memset's end at 7.71 ms) less busy; delays 0.1, 0.3, 0.3, 0.1 ms; forward span 2.0,
    # backward 4.5 -> 7.0 (BP point), optimizer span 1.0, DataLoader span 0.9; the 0.6 ms cudaStreamSynchronize_v3020
    assert gpu == [(2_500_000, 200_000, 10_000, 2_710_000, 7_410_000 - 2_710_000, 4, 200_000, 300_000, 900_000,
                    2 * MS, 2_500_000, MS, 600_000)] * 2


def test_without_a_step_range_name_there_are_no_steps(tmp_path: Path):
    out = run(NSYS, tmp_path / "out").output
    assert query(out, "SELECT count(*) FROM step_point") == [(0,)]
    assert query(out, "SELECT count(*) FROM device_exec") == [(10,)]


def test_kernel_stats_equal_a_direct_query(tmp_path: Path):
    out = run(NSYS, tmp_path / "out").output
    stats = query(out, "SELECT name, instances, total_ns, min_ns, max_ns, median_ns FROM kernel_stats")
    assert {n: (i, t, lo, hi) for n, i, t, lo, hi, _ in stats} == _kernel_totals(NSYS / "report1.sqlite")
    assert stats[0][5] == 1_250_000
    shapes = query(out, "SELECT grid, block, instances, total_ns FROM kernel_shape_stats ORDER BY grid")
    assert shapes == [("4,1,1", "128,1,1", 2, 2 * MS), ("8,2,1", "128,1,1", 2, 3 * MS)]


def test_real_export_kernels_calls_and_ranges(tmp_path: Path):
    export = realdata("Fuser/report1.sqlite")
    source = tmp_path / "in"
    source.mkdir()
    shutil.copy(export, source / "report1.sqlite")
    out = run(source, tmp_path / "out").output
    stats = query(out, "SELECT name, sum(instances), sum(total_ns), min(min_ns), max(max_ns) FROM kernel_stats GROUP BY name")
    assert {n: (int(i), int(t), lo, hi) for n, i, t, lo, hi in stats} == _kernel_totals(export)
    assert sum(int(i) for _, i, *_ in stats) == 18
    calls = _direct(export, "SELECT s.value, count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s "
                            "ON s.id = r.nameId GROUP BY 1")
    expected: dict[str, int] = {}
    for name, count in calls:
        version = name.rsplit("_v", 1)[-1]  # CUPTI's CUDA version suffix (4-5 digits), not a function's own _v2
        base = name.rsplit("_v", 1)[0] if version.isdigit() and len(version) in (4, 5) else name
        expected[base] = expected.get(base, 0) + count
    assert dict(query(out, "SELECT name, count(*) FROM host_api GROUP BY name")) == expected
    ranges = _direct(export, "SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND end IS NOT NULL")
    assert query(out, "SELECT count(*) FROM host_op") == ranges
    for kind, table in (("memcpy", "MEMCPY"), ("memset", "MEMSET"), ("sync", "SYNCHRONIZATION")):
        direct = _direct(export, f"SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_{table}")
        assert query(out, f"SELECT count(*), sum(dur_ns)::BIGINT FROM device_exec WHERE kind = '{kind}'") == direct


def test_real_export_kernels_link_to_the_innermost_range_around_their_launch(tmp_path: Path):
    """Independently of the reader's stack walk: per kernel, the shortest NVTX range of the launching
    thread that holds the start of the runtime call with its correlation id (same process)."""
    export = realdata("Fuser/report1.sqlite")
    source = tmp_path / "in"
    source.mkdir()
    shutil.copy(export, source / "report1.sqlite")
    out = run(source, tmp_path / "out").output
    direct = _direct(export, """
        SELECT k.start, (SELECT coalesce(n.text, s.value) FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId
                         WHERE n.globalTid = r.globalTid AND n.eventType IN (59, 60) AND n.start <= r.start
                           AND n.end > r.start ORDER BY n.end - n.start, n.start DESC LIMIT 1)
        FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
          ON r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24)
        ORDER BY k.start""")
    ours = query(out, "SELECT start_ns, op_name FROM device_exec WHERE kind = 'kernel' ORDER BY start_ns")
    assert ours == direct
    assert sum(1 for _, op in ours if op) == 8  # the nvFuser kernels; PyTorch's own ran outside any range


def test_export_without_kernel_or_nvtx_tables(tmp_path: Path):
    export = realdata("WeatherBench2/report1.sqlite")
    source = tmp_path / "in"
    source.mkdir()
    shutil.copy(export, source / "rank-3.sqlite")
    result = run(source, tmp_path / "out", strict=True)
    assert result.ranks == [3]
    assert query(result.output, "SELECT kind, dur_ns, bytes FROM device_exec") == [("memset", 1472, 4608)]
    assert query(result.output, "SELECT count(*) FROM host_api") == [(23,)]
    # its OS runtime calls are its host ops: per name, the calls and total time the export holds
    direct = _direct(export, "SELECT s.value, count(*), sum(o.end - o.start) FROM OSRT_API o JOIN StringIds s "
                             "ON s.id = o.nameId GROUP BY 1")
    ours = query(result.output, "SELECT op_name, count(*), sum(dur_ns)::BIGINT FROM host_op WHERE category = 'os_runtime' "
                                "GROUP BY 1")
    assert sorted(ours) == sorted(direct) and len(ours) > 10
    stats = query(result.output, "SELECT op_name, calls, host_total_ns FROM host_op_stats WHERE op_name = 'poll'")
    assert stats == [next(row for row in direct if row[0] == "poll")]
    assert not result.health["partial"]  # nothing lost: the missing kernels are said, not damage
    said = _ledger(result)
    assert said[("other", "kept")] == 0 and said[("out_of_range", "kept")] == 3  # three OS calls of 0 ns


NO_KERNELS = FIXTURES / "nsys_no_kernels"


def test_no_kernels_generator_reproduces(tmp_path: Path):
    assert_generator_reproduces("nsys.py", NO_KERNELS, tmp_path, "--no-kernels")


def test_an_export_without_kernels_gives_its_os_runtime_calls_and_says_why_the_gpu_analyses_are_empty(tmp_path: Path):
    """The fixture's numbers by hand (fixtures/generators/nsys.py --no-kernels): two polls of 3 and 4 ms, an ioctl
    of 0 ns, a pthread_create of 0.1 ms on another thread; one memset of 10 µs."""
    result = run(NO_KERNELS, tmp_path / "out")
    ops = query(result.output, "SELECT op_name, tid, start_ns - 1000000000, dur_ns, category, parent_index FROM host_op "
                               "ORDER BY start_ns, op_name")
    assert ops == [("poll", 4243, MS, 3 * MS, "os_runtime", None),
                   ("pthread_create", 4244, 1_500_000, 100_000, "os_runtime", None),
                   ("ioctl", 4243, 2 * MS, 0, "os_runtime", None),
                   ("poll", 4243, 5 * MS, 4 * MS, "os_runtime", None)]
    stats = query(result.output, "SELECT op_name, calls, host_total_ns, host_self_share FROM host_op_stats "
                                 "ORDER BY op_name")
    assert stats == [("ioctl", 1, 0, 0.0), ("poll", 2, 7 * MS, pytest.approx(7 / 7.1)),
                     ("pthread_create", 1, 100_000, pytest.approx(0.1 / 7.1))]
    assert query(result.output, "SELECT kind, dur_ns, bytes FROM device_exec") == [("memset", 10_000, 4096)]
    assert query(result.output, "SELECT count(*) FROM kernel_stats") == [(0,)]
    assert not result.health["partial"]
    rows = {(r["check_name"], r["action"]): r for r in result.health["rows"]}
    assert "no CUDA kernels" in rows[("other", "kept")]["message"]
    assert "4 OS runtime calls" in rows[("other", "kept")]["message"]
    assert rows[("out_of_range", "kept")]["rows"] == 1  # the ioctl of 0 ns, kept
    assert "OSRT_API" in rows[("out_of_range", "kept")]["message"]


def test_an_export_of_nothing_is_nothing_to_analyse(tmp_path: Path):
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(NO_KERNELS / "report1.sqlite", folder / "report1.sqlite")
    with sqlite3.connect(folder / "report1.sqlite") as db:
        for table in ("OSRT_API", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMSET"):
            db.execute(f"DELETE FROM {table}")
    with pytest.raises(NoProfilerData, match="read no event"):
        run(folder, tmp_path / "out")


def test_a_kernel_table_under_another_name_is_read_by_its_columns(tmp_path: Path):
    """A newer schema may name the kernel table otherwise: the table with its columns is read, and said."""
    folder = _export_with(tmp_path, "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME TO CUDA_GPU_KERNEL_EVENTS")
    result = run(folder, tmp_path / "out")
    stats = query(result.output, "SELECT name, instances, total_ns, min_ns, max_ns FROM kernel_stats")
    assert {n: (i, t, lo, hi) for n, i, t, lo, hi in stats} == _kernel_totals(NSYS / "report1.sqlite")
    rows = {(r["check_name"], r["action"]): r for r in result.health["rows"]}
    assert "read CUDA_GPU_KERNEL_EVENTS" in rows[("ambiguous", "kept")]["message"]
    assert not result.health["partial"]
    info = query(result.output, "SELECT metadata_json->>'tables_by_columns' FROM run_info")
    assert json.loads(info[0][0]) == {"CUPTI_ACTIVITY_KIND_KERNEL": "CUDA_GPU_KERNEL_EVENTS"}


def test_zero_length_kernels_are_counted_and_kept(tmp_path: Path):
    folder = _export_with(tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start WHERE rowid IN (1, 3)")
    result = run(folder, tmp_path / "out")
    assert query(result.output, "SELECT count(*), count(*) FILTER (WHERE dur_ns = 0) FROM device_exec "
                                "WHERE kind = 'kernel'") == [(4, 2)]
    assert _ledger(result)[("out_of_range", "kept")] == 2
    assert not result.health["partial"]


def _export_with(tmp_path: Path, sql: str, name: str = "report1.sqlite") -> Path:
    folder = tmp_path / "in"
    folder.mkdir(exist_ok=True)
    shutil.copy(NSYS / "report1.sqlite", folder / name)
    with sqlite3.connect(folder / name) as db:
        db.execute(sql)
    return folder


def _ledger(result) -> dict[tuple[str, str], int]:
    return {(r["check_name"], r["action"]): r["rows"] for r in result.health["rows"]}


def test_a_value_of_the_wrong_type_costs_its_row_and_is_reported(tmp_path: Path):
    """A start that is text: the kernel is left out (not the export), and the ledger names the table and column."""
    folder = _export_with(tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'soon' WHERE rowid = 3")
    result = run(folder, tmp_path / "out")
    kernels = _direct(NSYS / "report1.sqlite", "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0][0]
    assert query(result.output, "SELECT count(*) FROM device_exec WHERE kind = 'kernel'") == [(kernels - 1,)]
    rows = {(r["check_name"], r["action"]): r for r in result.health["rows"]}
    assert rows[("malformed_record", "repaired")]["rows"] == 1  # the value read as none...
    assert "table CUPTI_ACTIVITY_KIND_KERNEL" in rows[("malformed_record", "repaired")]["message"]
    assert "(start: 1)" in rows[("malformed_record", "repaired")]["message"]
    assert rows[("malformed_record", "dropped")]["rows"] == 1  # ... then its row left out


def test_huge_integers_are_refused_not_wrapped(tmp_path: Path):
    folder = _export_with(tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = 1e30 WHERE rowid = 1")
    result = run(folder, tmp_path / "out")
    kernels = _direct(NSYS / "report1.sqlite", "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0][0]
    assert query(result.output, "SELECT count(*), max(dur_ns) < 10000000 FROM device_exec WHERE kind = 'kernel'") == [
        (kernels - 1, True)]
    assert _ledger(result)[("malformed_record", "dropped")] == 1


def test_non_utf8_names_are_read_and_counted(tmp_path: Path):
    folder = _export_with(tmp_path, "UPDATE StringIds SET value = CAST(X'6B65726E656CFF' AS TEXT) "
                                    "WHERE value LIKE 'void gemm%'")
    result = run(folder, tmp_path / "out")
    assert query(result.output, "SELECT DISTINCT name FROM device_exec WHERE kind = 'kernel'") == [("kernel\ufffd",)]
    warnings = (result.output / "manifest.json").read_text()
    assert "1 strings are not UTF-8" in warnings
    assert _ledger(result)[("bad_encoding", "repaired")] == 1


@pytest.mark.parametrize("content, message", [
    (b"", "empty file"),
    (b"hello, not a database" * 100, "cannot be read as an SQLite database"),
])
def test_not_an_export(content: bytes, message: str, tmp_path: Path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "report1.sqlite").write_bytes(content)
    with pytest.raises(InputError, match=f"report1.sqlite: {message}"):
        run(folder, tmp_path / "out", strict=True)


def test_other_sqlite_databases_are_named(tmp_path: Path):
    other, nvprof = tmp_path / "other", tmp_path / "nvprof"
    other.mkdir()
    nvprof.mkdir()
    with sqlite3.connect(other / "cache.sqlite") as db:
        db.execute("CREATE TABLE items (id INTEGER)")
    with sqlite3.connect(nvprof / "rank-1.sqlite") as db:
        db.execute("CREATE TABLE StringTable (_id_ INTEGER, value TEXT)")
        db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL (start INTEGER)")
    with pytest.raises(InputError, match="cache.sqlite: not an Nsight Systems export"):
        run(other, tmp_path / "out", strict=True)
    with pytest.raises(InputError, match="rank-1.sqlite: an nvprof export"):
        run(nvprof, tmp_path / "out", strict=True)


def test_truncated_export_is_named(tmp_path: Path):
    folder = tmp_path / "in"
    folder.mkdir()
    data = (NSYS / "report1.sqlite").read_bytes()
    (folder / "report1.sqlite").write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="report1.sqlite: cannot be read as an SQLite database"):
        run(folder, tmp_path / "out", strict=True)


def test_the_input_folder_is_left_as_it_was(tmp_path: Path):
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(NSYS / "report1.sqlite", folder / "report1.sqlite")
    folder.chmod(0o555)
    try:
        run(folder, tmp_path / "out", strict=True)
        assert [p.name for p in folder.iterdir()] == ["report1.sqlite"]
    finally:
        folder.chmod(0o755)


def test_timeline_of_an_export(tmp_path: Path):
    out = run(NSYS, tmp_path / "out", step_range_name="train_step").output
    events = json.loads((out / "timeline" / "trace.json").read_text())["traceEvents"]
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    by_lane: dict[str, int] = {}
    for event in events:
        if event["ph"] == "X":
            lane = threads[event["pid"], event["tid"]].split(":")[0]
            by_lane[lane] = by_lane.get(lane, 0) + 1
    # 2 steps; their 3 phases each; 15 NVTX ranges and 11 runtime calls on the host threads; 10 device activities
    overlap = by_lane.pop("Overlap Analysis")
    assert by_lane == {"Step Trace": 2 + 6, "Host": 15 + 11, "GPU kernels": 10}
    assert overlap == query(out, "SELECT count(*) FROM overlap_segment")[0][0] > 0


# --- names StringIds does not resolve (issue 33) ----------------------------------------------------------

def _unnamed_rows(result) -> list[tuple]:
    return sorted((r["check_name"], r["action"], r["rows"], r["tables"], r["message"].split(": ", 1)[1])
                  for r in result.health["rows"])


def test_a_kernel_name_id_that_points_nowhere_is_counted_with_the_name_read_instead(tmp_path: Path):
    """Kernel 1's demangled name id points nowhere: it is read under its short name, and the ledger says so."""
    folder = _export_with(tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 99 WHERE rowid = 1")
    result = run(folder, tmp_path / "out")
    assert result.exit_code == 3  # a name rewritten: kernel statistics by name change
    assert query(result.output, "SELECT name, count(*) FROM device_exec WHERE kind = 'kernel' GROUP BY ALL "
                                "ORDER BY ALL") == [("gemm_kernel", 1), ("void gemm_kernel<float, 128>(float const*, float*)", 3)]
    assert _unnamed_rows(result) == [(
        "unlinked", "repaired", 1, "device_exec",
        ("1 kernels whose demangledName id StringIds lacks; named their shortName (the kernel's name without its "
         "template and argument types) instead"))]
    assert result.health["rows"][0]["example"] == "id 99"


def test_name_ids_that_point_nowhere_in_every_table_are_counted_per_table(tmp_path: Path):
    folder = _export_with(tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 99, shortName = 98 "
                                    "WHERE rowid <= 2")
    with sqlite3.connect(folder / "report1.sqlite") as db:
        db.execute("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET nameId = 97 WHERE nameId = 5")  # cudaMemsetAsync: 2 calls
        db.execute("UPDATE NVTX_EVENTS SET textId = 96 WHERE textId = 7")  # the registered range
    result = run(folder, tmp_path / "out")
    assert result.exit_code == 3
    assert query(result.output, "SELECT name, count(*) FROM device_exec WHERE kind = 'kernel' GROUP BY ALL "
                                "ORDER BY ALL") == [("kernel 99", 2), ("void gemm_kernel<float, 128>(float const*, float*)", 2)]
    assert query(result.output, "SELECT count(*) FROM host_api WHERE name = 'nameId 97'") == [(2,)]
    assert query(result.output, "SELECT count(*) FROM host_op WHERE op_name = '[unnamed range]'") == [(1,)]
    # one ledger row per check and action: the three tables' reports add up (the first message is kept)
    [row] = result.health["rows"]
    assert (row["check_name"], row["action"], row["rows"], row["events"]) == ("unlinked", "repaired", 2 + 2 + 1, 3)
    assert row["message"].endswith("2 kernels whose demangledName and shortName ids StringIds lacks; named "
                                   "'kernel <demangledName id>' instead")


def test_an_export_without_string_ids_counts_every_name_it_cannot_read(tmp_path: Path):
    folder = _export_with(tmp_path, "DROP TABLE StringIds")
    result = run(folder, tmp_path / "out")
    assert result.exit_code == 3
    kernels = _direct(NSYS / "report1.sqlite", "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0][0]
    calls = _direct(NSYS / "report1.sqlite", "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME")[0][0]
    assert query(result.output, "SELECT DISTINCT name FROM device_exec WHERE kind = 'kernel'") == [("kernel 3",)]
    [row] = result.health["rows"]  # kernels, calls and the registered range: one row (the first message kept)
    assert (row["check_name"], row["action"], row["rows"], row["events"]) == ("missing_file", "repaired",
                                                                              kernels + calls + 1, 3)
    assert row["message"].endswith(f"the export has no StringIds table: {kernels} kernels whose demangledName and "
                                   "shortName ids point nowhere; named 'kernel <demangledName id>' instead")
