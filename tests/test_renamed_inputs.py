"""Every fixture family, renamed the way users rename what a profiler saved, is read (the same rows as the original)
or named (exit 1 naming what was found, or a trace-health row naming the files): never an empty success.

Users move a result into other folders, rename its folders (rank folders `rank0_ascend_pt`, `rank_0`, the profiler
folder, the job folder) and rename a trace file; they do not rename the files inside a result that the profiler
names by contract (kernel_details.csv, op_execute_timestamp_<device>.txt, hwts.data.<n>.slice_<k>, device_<id>/,
info.json.<id>, PROF_*'s mindstudio_profiler_output/): the format's own tools (MindSpore, MindInsight, msprof,
msprof-analyze) find the data by those names too. Per family, RENAMES lists the renames it tolerates and why the
others are not a user's rename; each renamed copy is analysed once (the originals are shared with the other tests,
conftest.shared_analysis), one family per test so that pytest-xdist spreads them. The real torch_npu pair of
../shared/realdata is renamed too (skipped when it is absent).
"""
from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import FIXTURES, realdata, run
from profpipe.errors import EXIT_NOTHING_USABLE, EXIT_PARTIAL, ProfpipeError
from profpipe.unread import DESCRIPTIVE_TABLES

Rename = Callable[[Path], None]


def folders(pattern: str, new: str) -> Rename:
    """Rename every folder whose name matches `pattern` (re.fullmatch) to `new` (a template: {i} is a running number,
    \\1 a group), the deepest first."""
    def rename(root: Path) -> None:
        found = sorted((p for p in root.rglob("*") if p.is_dir() and re.fullmatch(pattern, p.name)),
                       key=lambda p: (-len(p.parts), str(p)))
        for i, path in enumerate(found):
            path.rename(path.with_name(re.sub(pattern, new.replace("{i}", str(i)), path.name)))
    return rename


def files(pattern: str, new: str) -> Rename:
    """Rename every file whose name matches `pattern` (re.fullmatch) to re.sub(pattern, `new`)."""
    def rename(root: Path) -> None:
        for path in sorted(p for p in root.rglob("*") if p.is_file() and re.fullmatch(pattern, p.name)):
            path.rename(path.with_name(re.sub(pattern, new, path.name)))
    return rename


def into(name: str) -> Rename:
    """Move everything of the input into a new folder `name` (a result copied into a folder of runs)."""
    def rename(root: Path) -> None:
        inner = root / name
        entries = list(root.iterdir())
        inner.mkdir()
        for entry in entries:
            entry.rename(inner / entry.name)
    return rename


@dataclass(frozen=True)
class Family:
    """A fixture family: the input analysed (relative to fixtures/), the renames a user makes and what is not
    tolerated, with why."""

    input: str
    renames: tuple[Rename, ...]
    why: str
    #: Renames that break the format's naming contract (a user's mistake, not a user's rename): the run must name
    #: what it did not read.
    breaks: tuple[Rename, ...] = ()


ASCEND_RESULT = r".+_ascend_(?:ms|pt)"  # <worker>_<pid>_<timestamp>_ascend_ms|pt, or a user's rank0_ascend_pt
RENAMES: dict[str, Family] = {
    "ascend_memory": Family("ascend_memory", (folders(r"worker_7_.+_ascend_ms", "rank_1"), folders("profiler", "prof_run"),
                                              into("job")),
                            "result folders told by content; memory CSV names are the export's contract"),
    "ascend_memory_pb": Family("ascend_memory_pb/profiler", (into("memory_pb"),),
                               "memory_usage_<rank>.pb is MindSpore's name (mindspore_1.10.1/ holds expected values)"),
    "ascend_ms_cluster": Family("ascend_ms_cluster", (folders(ASCEND_RESULT, "rank{i}_ascend_pt"), into("cluster")),
                                "rank folders renamed (rank from profiler_info_<rank>.json); PROF_* keeps its name"),
    "ascend_ms_era_f": Family("ascend_ms_era_f", (folders(ASCEND_RESULT, "rank_{i}"), into("run")),
                              "kernel_details.csv and profiler_info_<rank>.json are the result's contract",
                              (files("kernel_details.csv", "kernel_details_rank3.csv"),)),
    "ascend_pmu": Family("ascend_pmu", (folders(ASCEND_RESULT, "rank0_ascend_pt"), into("pmu_job")),
                         "PROF_* and device_<id> name the msprof job and the device (msprof-analyze finds PROF_* by "
                         "name); the PMU CSV names are the export's"),
    "ascend_pt_cluster": Family("ascend_pt_cluster", (folders(ASCEND_RESULT, "node{i}"), into("cluster_run")),
                                "rank folders under any name (rank from profiler_info_<rank>.json), trimmed ranks too; "
                                "the derived files' names are the tool's contract"),
    "ascend_pt_pair": Family("ascend_pt_pair", (folders(ASCEND_RESULT, "rank_{i}"), into("pair")),
                             "result folders under any name; ascend_pytorch_profiler_<rank>.db and kernel_details.csv "
                             "are torch_npu's names (msprof-analyze finds them by name)",
                             (files(r"ascend_pytorch_profiler_0\.db", "profile.db"),)),
    "ascend_pt_smallnet": Family("ascend_pt_smallnet/text", (folders(ASCEND_RESULT, "smallnet_npu0"), into("run")),
                                 "the result folder under any name"),
    "ascend_pt_text_min": Family("ascend_pt_text_min", (folders(ASCEND_RESULT, "npu0"), into("run")),
                                 "the result folder under any name", (files("trace_view.json", "trace.json"),)),
    "ascend_raw": Family("ascend_raw", (folders("era_(.+)", r"job_\1"), into("raw")),
                         "raw slices are named by kind, device and slice: msprof's contract"),
    "host_info": Family("host_info", (folders("profiler", "profiler_rank0"),),
                        "host_info/host_info_<rank>.csv is MindSpore's contract"),
    "kineto": Family("kineto", (files(r"rank-(\d)\.pt\.trace\.json", r"rank\1_trace.json"),
                                files(r"worker0\.pt\.trace\.json", "worker0.json"), into("traces")),
                     "a trace under any name: the rank from distributedInfo, or a rank token in the name; a trace "
                     "without either, beside others, has no rank",
                     (files(r"worker0\.pt\.trace\.json", "trace.json"),)),
    "kineto_async": Family("kineto_async", (files(r"rank-(\d)\.pt\.trace\.json", r"rank_\1.json"),),
                           "a trace under any name"),
    "kineto_nccl": Family("kineto_nccl", (files(r"rank-(\d)\.pt\.trace\.json", r"worker\1.json"), into("job")),
                          "a trace under any name"),
    "kineto_nccl_straggler": Family("kineto_nccl_straggler",
                                    (files(r"rank-(\d)\.pt\.trace\.json", r"node0_rank\1.pt.trace.json"),),
                                    "a trace under any name"),
    "minddata_mindspore": Family("minddata_mindspore/slow_generator", (into("minddata"),),
                                 "pipeline_profiling_<rank>.json and its siblings are MindSpore's names"),
    "minddata_sink": Family("minddata_sink", (folders("JOB", "job_0"), folders("ascend", "sink_rank0"),
                                              into("runs")),
                            "the AICPUMI slice and the queue files are named by MindSpore"),
    "mindspore_cpu": Family("mindspore_cpu/lenet_graph", (folders(ASCEND_RESULT, "rank_0"), into("lenet")),
                            "FRAMEWORK/cpu_op_execute_timestamp_<rank>.txt is MindSpore's contract"),
    "mindspore_cpu_memory": Family("mindspore_cpu_memory", (folders(ASCEND_RESULT, "rank0_ascend_ms"),),
                                   "FRAMEWORK/ file names are MindSpore's"),
    "mindspore_fwk_tlv": Family("mindspore_fwk_tlv", (folders(ASCEND_RESULT, "rank_{i}"),
                                                      folders("profiler", "prof_v24"), into("tlv")),
                                "FRAMEWORK/ and its file names are MindSpore's contract"),
    "mindspore_gpu": Family("mindspore_gpu/graph_2x", (folders("profiler", "profiler_data"), into("gpu_run")),
                            "op_execute_timestamp_<device>.txt and its siblings are MindSpore's names"),
    "mindspore_hccl": Family("mindspore_hccl", (folders("profiler", "rank3"),),
                             "hccl_info/<op>_dev<device>/iter<n>.trace are MindSpore's names"),
    "mindspore_stack": Family("mindspore_stack", (folders(ASCEND_RESULT, "rank0_ascend_pt"), into("stack")),
                              "ASCEND_PROFILER_OUTPUT/ and profiler_info_<rank>.json are the result's contract",
                              (files("kernel_details.csv", "kernels.csv"),)),
    "msprof_smallnet": Family("msprof_smallnet", (into("rank0"),),
                              "PROF_* names the job (msprof and msprof-analyze find it by name)"),
    "msprof_timeline": Family("msprof_timeline", (into("node_a"),), "PROF_* names the job"),
    "msprof_tx": Family("msprof_tx", (into("mstx_run"),), "PROF_* and mindstudio_profiler_output/ name the job and "
                        "its export", (folders("mindstudio_profiler_output", "output"),)),
    "nsys": Family("nsys", (files(r"report1\.sqlite", "rank0_profile.sqlite"), into("nsys")),
                   "a .sqlite export under any name; its suffix is what marks it",
                   (files(r"report1\.sqlite", "report1.nsys-rep"),)),
    "nsys_no_kernels": Family("nsys_no_kernels", (files(r"report1\.sqlite", "os_calls.sqlite"), into("nsys")),
                              "a .sqlite export under any name, kernels or not"),
    "paddle": Family("paddle", (files(r"worker0\.paddle_trace\.json", "rank0.json"),), "a trace under any name"),
    "pytorch_cuda": Family("pytorch_cuda", (files(r"rank-0\.pt\.trace\.json\.gz", "trace.json.gz"),),
                           "a gzip trace under any name"),
}
#: Fixture folders that are not a profiler's output: expected values, generators, a lone metadata file.
NOT_INPUTS = {"generators": "the fixture generators", "hta": "HTA's expected values (JSON), no profiler output",
              "profiler_metadata": "a profiler_metadata.json alone, which holds no event (tests/test_user_metadata.py)",
              "msprof_analyze": "msprof-analyze's expected values (JSON)"}


def test_every_fixture_family_is_covered() -> None:
    families = {path.name for path in FIXTURES.iterdir() if path.is_dir()}
    assert families <= set(RENAMES) | set(NOT_INPUTS), sorted(families - set(RENAMES) - set(NOT_INPUTS))
    assert all((FIXTURES / family.input).exists() for family in RENAMES.values())


def _copy(family: Family, target: Path) -> Path:
    if (FIXTURES / family.input).is_file():
        target.mkdir()
        shutil.copy(FIXTURES / family.input, target)
    else:
        shutil.copytree(FIXTURES / family.input, target)
    return target


def _events(row_counts: dict[str, int]) -> dict[str, int]:
    return {table: rows for table, rows in row_counts.items() if rows and table not in DESCRIPTIVE_TABLES}


@pytest.mark.parametrize("name", sorted(RENAMES))
def test_a_renamed_family_is_read_or_named(name: str, tmp_path: Path) -> None:
    family = RENAMES[name]
    original = run(FIXTURES / family.input, tmp_path / "original")
    copy = _copy(family, tmp_path / "renamed")
    for rename in family.renames:
        rename(copy)
    try:
        renamed = run(copy, tmp_path / "out", timeline="none")
    except ProfpipeError as error:  # named: exit 1 with what was found
        assert error.exit_code == EXIT_NOTHING_USABLE and str(copy) in str(error), error
        pytest.fail(f"{name}: renamed, nothing is read any more ({family.why}):\n{error}")
    assert _events(renamed.row_counts), f"{name}: an empty success"
    named = [r for r in renamed.health["rows"] if r["check_name"] in ("unread_file", "source_failed")]
    assert _events(renamed.row_counts) == _events(original.row_counts) or named, (
        f"{name}: renamed, rows were lost in silence: {_events(original.row_counts)} -> {_events(renamed.row_counts)}")
    assert not named, f"{name}: renamed, read only in part ({family.why}): {[r['message'] for r in named]}"


@pytest.mark.parametrize("name", sorted(name for name, family in RENAMES.items() if family.breaks))
def test_a_rename_that_breaks_the_format_is_named(name: str, tmp_path: Path) -> None:
    """A file renamed against its format's contract is not read, and the run says so: exit 1 naming what it found,
    or a trace-health row naming the file; never an empty success or rows lost in silence."""
    family = RENAMES[name]
    copy = _copy(family, tmp_path / "renamed")
    for rename in family.breaks:
        rename(copy)
    try:
        renamed = run(copy, tmp_path / "out", timeline="none")
    except ProfpipeError as error:
        assert error.exit_code == EXIT_NOTHING_USABLE and str(copy) in str(error), error
        return
    named = [r for r in renamed.health["rows"] if r["check_name"] in ("unread_file", "source_failed")]
    assert named and _events(renamed.row_counts), f"{name}: {_events(renamed.row_counts)}, {renamed.health['rows']}"
    assert renamed.exit_code == EXIT_PARTIAL


@pytest.mark.parametrize("export", ["text", "db"])
def test_the_real_torch_npu_results_renamed_are_read_or_named(export: str, tmp_path: Path) -> None:
    """The real Level 1 pair (../shared/realdata) with its rank folders renamed as users do (rank0_ascend_pt ->
    rank_0, into a folder of runs): the same rows as the original, or, while its export is not read, the same exit 1
    naming the same files."""
    source = realdata(f"Ascend-msinsight/test/data/pytorch/{export}/level1")
    copy = tmp_path / "renamed"
    shutil.copytree(source, copy)
    for rename in (folders(r"rank(\d)_ascend_pt", r"rank_\1"), into("job_2025")):
        rename(copy)
    try:
        original = run(source, tmp_path / "original")
    except ProfpipeError as error:
        with pytest.raises(ProfpipeError) as renamed_error:
            run(copy, tmp_path / "out", timeline="none")
        assert renamed_error.value.exit_code == error.exit_code == EXIT_NOTHING_USABLE
        assert sorted(re.findall(r"[\w.]+\.db", str(renamed_error.value))) == sorted(re.findall(r"[\w.]+\.db",
                                                                                                 str(error)))
        return
    renamed = run(copy, tmp_path / "out", timeline="none")
    assert _events(renamed.row_counts) == _events(original.row_counts) and _events(renamed.row_counts)
    assert renamed.ranks == original.ranks == [0, 1] and renamed.exit_code == original.exit_code
