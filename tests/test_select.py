"""--select (profpipe/models.py `select`, profpipe/run.py): a selection builds exactly its models' upstream over the
model graph (MODEL+ its downstream too), reads only the sources whose tables it reads, writes only what it built
(CSVs, report pages, findings; no timeline unless asked), gives the same rows as the full run, and is recorded in
the manifest, summary.json and the warehouse; an unknown name is a usage error naming the near ones."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, run
from profpipe import ingest
from profpipe.advisor import load_rules
from profpipe.batch import BatchOptions, batch
from profpipe.cli import app
from profpipe.errors import UsageError
from profpipe.models import load_models, query_reads, select
from profpipe.options import Options
from profpipe.report import write_report
from profpipe.tables import catalog
from profpipe.warehouse import connect, lacking

KINETO = FIXTURES / "kineto" / "current"
#: Two sources of two families: a MindSpore CPU dump and its memory files.
CPU_MEMORY = FIXTURES / "mindspore_cpu_memory"


def _upstream(name: str, refs: dict[str, frozenset[str]]) -> set[str]:
    """The oracle: `name` and everything it reads, by plain recursion over each model's refs."""
    return {name}.union(*(_upstream(ref, refs) for ref in refs[name]))


def _refs() -> dict[str, frozenset[str]]:
    return {m.name: m.refs for m in load_models()}


@pytest.mark.parametrize("name", ["op_type_stats", "step_phases", "critical_path_summary", "timeline_span",
                                  "op_analyse"])
def test_a_selection_builds_exactly_the_upstream_of_its_models(name: str) -> None:
    refs = _refs()
    chosen = select([name])
    assert chosen.models == _upstream(name, refs)
    assert select([f"+{name}"]).models == chosen.models  # +MODEL is MODEL: its upstream is always built
    sources = {m.name: m.sources for m in load_models()}
    assert chosen.tables == set().union(*(sources[m] for m in chosen.models)) - {"run_option"}


def test_model_plus_adds_every_model_that_reads_it_and_what_those_read() -> None:
    refs = _refs()
    downstream = {name for name in refs if "int_step" in _upstream(name, refs)}
    assert {"step_phases", "op_type_stats"} <= downstream  # both read int_step, transitively
    expected = set().union(*(_upstream(name, refs) for name in downstream))
    assert select(["int_step+"]).models == expected
    assert select(["int_step"]).models == _upstream("int_step", refs)
    # several names in one item, separated by commas or spaces, are several selectors
    assert select(["op_type_stats, kernel_stats step_phases"]).models == (
        _upstream("op_type_stats", refs) | _upstream("kernel_stats", refs) | _upstream("step_phases", refs))


def test_an_unknown_model_is_a_usage_error_naming_the_near_ones(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="op_type_stats"):
        select(["op_type_stat"])
    with pytest.raises(UsageError, match="at least one"):
        select([" , "])
    printed = CliRunner().invoke(app, ["analyse", str(KINETO), "-o", str(tmp_path / "out"), "--select",
                                       "op_type_stat+"])
    assert printed.exit_code == 2
    assert "no model 'op_type_stat'" in printed.output and "did you mean op_type_stats" in printed.output
    assert not (tmp_path / "out").exists()
    printed = CliRunner().invoke(app, ["batch", str(FIXTURES / "kineto"), "-w", str(tmp_path / "w"), "-s", "nosuch"])
    assert printed.exit_code == 2 and "no model 'nosuch'" in printed.output and not (tmp_path / "w").exists()


def test_every_family_declares_every_table_its_reader_names() -> None:
    """FAMILY_TABLES is what --select trusts to leave a source unread: each table name a family's module (or a module
    it imports, transitively) writes as a string must be declared for it."""
    folder = Path(ingest.__file__).parent
    texts = {path.stem: path.read_text(encoding="utf-8") for path in folder.glob("*.py")}
    tables = list(catalog())
    for family, declared in ingest.FAMILY_TABLES.items():
        seen, todo = {family}, [family]
        while todo:
            for name in re.findall(r"from \.(\w+) import", texts[todo.pop()]):
                if name in texts and name not in seen:
                    seen.add(name)
                    todo.append(name)
        named = {t for t in tables for module in seen if re.search(rf"[\"']{t}[\"']", texts[module])}
        assert named <= declared, (family, named - declared)


def _csvs(out: Path) -> set[str]:
    return {path.stem for path in (out / "reports").glob("*.csv")}


def test_op_type_stats_alone_gives_the_full_runs_rows_and_writes_only_what_it_built(tmp_path: Path) -> None:
    full = run(KINETO, tmp_path / "full", timeline="none").output
    result = run(KINETO, tmp_path / "sel", timeline="none", select=("op_type_stats",))
    out = result.output
    chosen = select(["op_type_stats"])
    # exactly the selection's models ran (or were created empty: their inputs held no rows)
    assert set(result.models.seconds) | set(result.models.skipped) == chosen.models
    with duckdb.connect(str(full / "profile.duckdb"), read_only=True) as a, \
            duckdb.connect(str(out / "profile.duckdb"), read_only=True) as b:
        for table in ("op_type_stats", "op_detail_stats"):
            rows = [sorted(con.execute(f"SELECT * FROM {table}").fetchall(), key=repr) for con in (a, b)]
            assert rows[0] == rows[1] and rows[0], table
        assert a.execute("SELECT count(*) FROM kernel_stats").fetchone()[0] > 0
        assert b.execute("SELECT count(*) FROM kernel_stats").fetchone()[0] == 0  # not built
    # the CSVs are the selection's marts with rows (and the ledger's, when it has rows): those of the full run
    marts = {m.name for m in load_models() if m.layer == "marts" and m.csv_order and m.name in chosen.models}
    assert _csvs(out) - {"trace_health"} == marts & _csvs(full) == {"op_type_stats", "op_detail_stats"}
    # no timeline and no report unless asked; findings only of the rules whose marts were built
    assert not (out / "timeline").exists() and not (out / "report.html").exists()
    checked = {f["rule_id"] for f in json.loads((out / "findings.json").read_text())["checked"]}
    assert checked == {r.id for r in load_rules() if (r.reads | set(r.requires)) <= chosen.models}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["selection"] == chosen.as_json()
    assert json.loads((full / "manifest.json").read_text())["selection"] is None
    assert json.loads((out / "reports" / "summary.json").read_text())["selection"]["select"] == ["op_type_stats"]
    listed = {line.split("│")[1].strip(): line.split("│")[3].strip()
              for line in CliRunner().invoke(app, ["tables", str(out)], terminal_width=200).output.splitlines()
              if line.count("│") >= 4 and line.split("│")[1].strip()}
    assert listed["kernel_stats"] == "not built" and int(listed["op_type_stats"]) > 0


def test_a_selection_reads_only_the_sources_whose_tables_it_reads(tmp_path: Path) -> None:
    full = run(CPU_MEMORY, tmp_path / "full", timeline="none")
    result = run(CPU_MEMORY, tmp_path / "sel", timeline="none", select=("op_type_stats",))
    assert full.row_counts["memory_record"] > 0 and full.row_counts["host_op"] > 0
    assert result.row_counts.get("memory_record", 0) == 0  # the memory source was not read
    assert result.row_counts["host_op"] == full.row_counts["host_op"]
    assert any("1 sources not read" in notice for notice in result.notices)
    assert result.exit_code == 0
    with pytest.raises(Exception, match="none of the"):  # a selection no source feeds: nothing to analyse (exit 1)
        run(KINETO, tmp_path / "none", timeline="none", select=("data_op_stats",))


def _pages(report: Path) -> list[dict]:
    """The pages of a report.html: the JSON its script draws."""
    html = report.read_text(encoding="utf-8")
    return json.loads(re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S)[1])["pages"]


def test_a_report_on_a_selection_shows_only_the_pages_it_built(tmp_path: Path) -> None:
    full = run(KINETO, tmp_path / "full", timeline="none", visual_report=True).output
    out = run(KINETO, tmp_path / "sel", timeline="none", visual_report=True, select=("op_type_stats",)).output
    every = [page["id"] for page in _pages(full / "report.html")]
    shown = [page["id"] for page in _pages(out / "report.html")]
    assert {"steps", "utilisation", "memory", "timeline"} <= set(every)
    assert shown == ["overview", "operators"]  # the operators page reads op_type_stats; the overview, the ledger
    rebuilt = write_report(out, tmp_path / "again.html")  # profpipe report OUT: the manifest says what was built
    assert [page["id"] for page in _pages(rebuilt)] == shown
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "No step trace" not in html  # a page or section of a model not built is absent, not "no data"
    [overview] = [page for page in _pages(out / "report.html") if page["id"] == "overview"]
    assert [s["title"] for s in overview["sections"]] == ["Trace health"]  # no run facts, phases or advisor: not built
    assert query_reads("report_op_types") <= select(["op_type_stats"]).built


def test_the_warehouse_tells_not_built_from_no_rows(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(KINETO, root / "sel")
    warehouse = tmp_path / "w"
    options = BatchOptions(roots=(root,), warehouse=warehouse, workers=1,
                           analysis=Options(select=("op_type_stats",)))
    assert batch(options).analysed == ["sel"]
    [page] = _pages(warehouse / "report.html")  # the batch report: the run's selection, its steps "not built"
    sections = {section["title"]: section for section in page["sections"]}
    built = [c["key"] for c in sections["Runs"]["columns"]].index("built")
    assert [row[built] for row in sections["Runs"]["rows"]] == ["--select op_type_stats"]
    assert "their steps were not built" in sections["Regressions"]["why"]
    run_report = write_report(warehouse, tmp_path / "run.html", run="sel")  # a run's report: what the run built
    assert [page["id"] for page in _pages(run_report)] == ["overview", "operators"]
    with connect(warehouse) as con:
        [(selection, lacks)] = con.execute("SELECT selection, tables_not_built FROM batch_runs").fetchall()
        assert selection == "op_type_stats" and "kernel_stats" in lacks and "op_type_stats" not in lacks
        assert con.execute("SELECT count(*) FROM op_type_stats").fetchone()[0] > 0
        assert lacking(con, "kernel_stats") == {"sel": "not built"}
        assert lacking(con, "op_type_stats") == {}
    assert batch(options).unchanged == ["sel"]
    # the same input batched without a selection is analysed again, and builds every table
    again = BatchOptions(roots=(root,), warehouse=warehouse, workers=1, analysis=Options(visual_report=False))
    assert batch(again).analysed == ["sel"]
    with connect(warehouse) as con:
        assert con.execute("SELECT selection, tables_not_built FROM batch_runs").fetchall() == [(None, None)]
        assert lacking(con, "kernel_stats") == {}
        assert lacking(con, "data_op") == {"sel": "no rows"}  # a PyTorch trace has no MindData pipeline


def test_the_api_selects_and_a_timeline_asked_for_builds_its_mart(tmp_path: Path) -> None:
    from profpipe import offline_analyse

    result = offline_analyse(KINETO, output_path=tmp_path / "api", select="op_type_stats kernel_stats")
    assert set(result.models.seconds) | set(result.models.skipped) == select(["op_type_stats", "kernel_stats"]).models
    assert not (tmp_path / "api" / "report.html").exists()  # not asked for
    assert _csvs(tmp_path / "api") - {"trace_health"} == {"op_type_stats", "op_detail_stats", "kernel_stats"}
    asked = run(KINETO, tmp_path / "timeline", timeline="summary", select=("op_type_stats",))
    assert (asked.output / "timeline").is_dir()
    assert "timeline_span" in json.loads((asked.output / "manifest.json").read_text())["selection"]["models"]


def test_the_compatible_files_are_those_of_the_reports_built(tmp_path: Path) -> None:
    """The Ascend text files (profpipe/export/ascend_reports.py) follow the report models built, as the CSVs do."""
    full = {p.name for p in (run(FIXTURES / "ascend_raw", tmp_path / "full", timeline="none").output / "reports").iterdir()}
    out = run(FIXTURES / "ascend_raw", tmp_path / "sel", timeline="none", select=("aicore_intermediate_detail",)).output
    written = {p.name for p in (out / "reports").iterdir()}
    assert {"output_timeline_data_0.txt", "step_trace_raw_0_detail_time.csv", "hccl_raw_0.csv"} & full
    assert written - {"trace_health.csv", "summary.json"} == {
        "aicore_intermediate_0_detail.csv", "output_op_compute_time_0.txt", "output_op_compute_time_detail_0.txt",
        "device_op_stats.csv"}
    assert written <= full


def test_a_selection_that_reads_no_frame_skips_the_python_frames_of_a_kineto_trace(tmp_path: Path) -> None:
    """The Kineto reader leaves the python_function events out of its work when no selected model reads
    python_frame (Source.wanted): none reaches the output, and op_type_stats is the full run's; selecting a model
    that reads them (python_call_tree) reads them all."""
    trace = FIXTURES / "pytorch_cuda"
    full = run(trace, tmp_path / "full", timeline="none")
    ops = run(trace, tmp_path / "ops", timeline="none", select=("op_type_stats",))
    tree = run(trace, tmp_path / "tree", timeline="none", select=("python_call_tree",))
    assert full.row_counts["python_frame"] > 1000
    assert ops.row_counts["python_frame"] == 0 and tree.row_counts["python_frame"] == full.row_counts["python_frame"]
    with duckdb.connect(str(full.output / "profile.duckdb"), read_only=True) as a, \
            duckdb.connect(str(ops.output / "profile.duckdb"), read_only=True) as b:
        rows = [sorted(con.execute("SELECT * FROM op_type_stats").fetchall(), key=repr) for con in (a, b)]
    assert rows[0] == rows[1] and rows[0]
