"""The SQL model library (sql/): layer rules, documentation that matches the tables, units, and the
models' data tests on the output of every fixture."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import duckdb
import pytest
import yaml

from conftest import FIXTURES, REPO, run
from model_harness import unmet_requirements
from profpipe.export.mindspore_reports import write_reports
from profpipe.model_checks import check_models
from profpipe.models import (UNIT_SUFFIXES, UNITS, ModelError, create_macros, documentation, load_models, run_models,
                             set_run_options)
from profpipe.report import write_report
from profpipe.tables import catalog

#: One folder per format family: the model tests run on each one's output.
FIXTURE_RUNS = ["mindspore_cpu/lenet_graph", "mindspore_gpu/two_ranks", "mindspore_hccl", "ascend_raw/era_a",
                "ascend_ms_era_f", "ascend_ms_cluster", "ascend_pt_cluster", "msprof_timeline", "msprof_tx", "kineto",
                "kineto_nccl", "kineto_nccl_straggler", "kineto_async", "paddle", "nsys",
                "minddata_mindspore", "minddata_sink", "ascend_pmu", "ascend_memory", "ascend_memory_pb", "mindspore_stack",
                "host_info", "mindspore_fwk_tlv"]
#: Unit endings no normalized or mart column may carry (docs/models.md, "Units"): other time and size units, percents,
#: and `_rate` (a share is `_share`, a quotient that can exceed 1 `_ratio`).
FORBIDDEN_SUFFIXES = ("_us", "_ms", "_s", "_sec", "_secs", "_seconds", "_usec", "_msec", "_pct", "_percent",
                      "_kb", "_mb", "_gb", "_kib", "_mib", "_gib", "_kbytes", "_mbytes", "_kb_s", "_gb_s", "_rate")
#: Whole column names that are a unit other than the convention's.
FORBIDDEN_NAMES = ("us", "ms", "pct", "percent", "percentage", "kb", "mb", "gb", "rate")


def _mini_library(root: Path, models: dict[str, tuple[str, str]]) -> Path:
    """A model library at `root` with `models`: path under sql/ (e.g. "marts/m") -> (SQL, extra YAML)."""
    for relative, (sql, extra) in models.items():
        path = root / f"{relative}.sql"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(sql)
        path.with_suffix(".yml").write_text("description: One row per thing.\ncolumns:\n"
                                            "  - {name: x, type: INTEGER, description: a number}\n" + extra)
    return root


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, Path]:
    """The output folder of each fixture in FIXTURE_RUNS."""
    root = tmp_path_factory.mktemp("model_outputs")
    found = {}
    for name in FIXTURE_RUNS:
        out = root / name.replace("/", "_")
        run(FIXTURES / name, out)
        found[name] = out
    return found


def test_every_fixture_gets_a_report(outputs):
    """The visual report's queries hold on every kind of dump profpipe reads (a failure: a query that assumed data)."""
    for name, out in outputs.items():
        report = write_report(out)
        assert b'id="report-data"' in report.read_bytes(), name


def test_layers_are_folders_and_each_model_reads_only_earlier_layers():
    allowed = {"staging": {"source"}, "intermediate": {"staging", "intermediate"},
               "marts": {"staging", "intermediate", "marts"}, "reports": {"marts"}}
    models = {m.name: m for m in load_models()}
    assert {m.layer for m in models.values()} == set(allowed)
    for model in models.values():
        assert (REPO / "sql" / model.layer / f"{model.name}.sql").is_file()
        assert all(models[r].layer in allowed[model.layer] for r in model.refs), model.name
        assert not model.sources or model.layer == "staging", model.name
    # one staging view per normalized table, and only staging reads them
    assert {s for m in models.values() for s in m.sources} == set(catalog()) | {"run_option"}
    assert {f"stg_{t}" for t in catalog()} <= set(models)


def test_reports_are_written_from_marts_with_their_file_names(outputs):
    reports = [m for m in load_models() if m.layer == "reports"]
    assert {m.file for m in reports} >= {"cpu_op_type_info_{rank}.csv", "gpu_activity_data_{rank}.csv"}
    for model in reports:
        hidden = [c.name for c in model.columns if c.hidden]
        assert "rank" in hidden, model.name
    written = {p.name for p in (outputs["mindspore_gpu/two_ranks"] / "reports").iterdir()}
    assert {"gpu_op_type_info_0.csv", "gpu_op_type_info_1.csv", "gpu_activity_data_1.csv"} <= written
    header = (outputs["mindspore_gpu/two_ranks"] / "reports" / "gpu_activity_data_0.csv").read_text().splitlines()[0]
    assert header.startswith("name,type,op_full_name,stream_id") and "total_ns" not in header and "rank" not in header


def test_the_csv_writer_splits_files_by_their_name_columns_and_writes_the_styles_columns(tmp_path):
    _mini_library(tmp_path, {"marts/m": ("SELECT * FROM (VALUES (0, 7, 1), (0, 7, 2), (1, 8, 3)) t(rank, device_id, x)",
                                         "  - {name: rank, type: INTEGER, description: r}\n"
                                         "  - {name: device_id, type: INTEGER, description: d}\n")})
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "r.sql").write_text("SELECT rank, device_id, x AS new, x AS old, NULL::INTEGER AS gone, "
                                                "CASE WHEN x = 3 THEN 0 END AS some FROM {{ ref('m') }}")
    (tmp_path / "reports" / "r.yml").write_text(
        "description: One row per x of a rank.\nfile: r_{device_id}.csv\nnewline: \"\\r\\n\"\ncsv_order: new DESC\n"
        "columns:\n  - {name: rank, type: INTEGER, hidden: true, description: r}\n"
        "  - {name: device_id, type: INTEGER, hidden: true, description: d}\n"
        "  - {name: new, type: INTEGER, style: latest, description: x}\n"
        "  - {name: old, type: INTEGER, style: legacy, description: x}\n"
        "  - {name: gone, type: INTEGER, optional: true, description: always NULL}\n"
        "  - {name: some, type: INTEGER, optional: true, description: NULL but for x = 3}\n")
    (tmp_path / "reports" / "s.sql").write_text("SELECT rank, x FROM {{ ref('m') }}")
    (tmp_path / "reports" / "s.yml").write_text(
        "description: Another report of another style.\nfile: s_{rank}.csv\nstyle: legacy\n"
        "columns:\n  - {name: rank, type: INTEGER, hidden: true, description: r}\n"
        "  - {name: x, type: INTEGER, description: x}\n")
    models = load_models(tmp_path)
    with duckdb.connect() as con:
        run_models(con, models)
        written = write_reports(con, tmp_path / "out", [m for m in models if m.layer == "reports"], "latest")
    # one file per rank, named by its device; the legacy column, the report of the other style and the
    # optional column that is empty in a file are left out
    assert [p.name for p in written] == ["r_7.csv", "r_8.csv"]
    assert (tmp_path / "out" / "r_7.csv").read_bytes() == b"new\r\n2\r\n1\r\n"
    assert (tmp_path / "out" / "r_8.csv").read_bytes() == b"new,some\r\n3,0\r\n"


def test_models_run_after_what_they_read():
    order = [m.name for m in load_models()]
    for model in load_models():
        for dependency in model.refs:
            assert order.index(dependency) < order.index(model.name), (model.name, dependency)


@pytest.mark.parametrize("case, sql, message", [
    ("mart reads a normalized table", "SELECT rank AS x FROM {{ source('host_op') }}", "only staging"),
    ("unnamed read", "SELECT count(*)::INTEGER AS x FROM host_op", "without ref"),
    ("unknown ref", "SELECT 1 AS x FROM {{ ref('nowhere') }}", "names no model"),
])
def test_the_loader_refuses_a_mart_that_breaks_the_rules(tmp_path, case, sql, message):
    _mini_library(tmp_path, {"marts/m": (sql, "")})
    with pytest.raises(ModelError, match=message):
        load_models(tmp_path)


def test_the_loader_refuses_a_staging_model_that_reads_a_mart_and_a_cycle(tmp_path):
    _mini_library(tmp_path, {"staging/stg_a": ("SELECT x FROM {{ ref('m') }}", ""),
                             "marts/m": ("SELECT 1 AS x", "")})
    with pytest.raises(ModelError, match="may not read the marts model m"):
        load_models(tmp_path / "")
    shutil.rmtree(tmp_path / "staging")
    _mini_library(tmp_path, {"marts/a": ("SELECT x FROM {{ ref('b') }}", ""),
                             "marts/b": ("SELECT x FROM {{ ref('a') }}", "")})
    with pytest.raises(ModelError, match="cycle"):
        load_models(tmp_path)


def test_the_loader_refuses_a_model_without_its_yaml(tmp_path):
    _mini_library(tmp_path, {"marts/m": ("SELECT 1 AS x", "")})
    (tmp_path / "marts" / "m.yml").unlink()
    with pytest.raises(ModelError, match="no m.yml"):
        load_models(tmp_path)


def test_an_intermediate_model_computed_once_is_a_temp_table_during_the_run_and_a_view_saved(tmp_path):
    _mini_library(tmp_path, {"intermediate/int_a": ("SELECT 1 AS x", ""),
                             "intermediate/int_b": ("SELECT x, random() AS r FROM {{ ref('int_a') }}",
                                                    "computed_once: true\n"),
                             "marts/m": ("SELECT (b1.r = b2.r)::INTEGER AS x FROM {{ ref('int_b') }} b1, "
                                         "{{ ref('int_b') }} b2", "")})
    models = load_models(tmp_path)
    assert {m.name: m.computed_once for m in models} == {"int_a": False, "int_b": True, "m": False}
    database = tmp_path / "p.duckdb"
    with duckdb.connect(str(database)) as con:
        run_models(con, models)
        assert con.sql("SELECT x FROM m").fetchall() == [(1,)]  # one temporary table, read twice
    with duckdb.connect(str(database)) as con:  # saved: the view, not the rows
        kinds = dict(con.sql("SELECT table_name, table_type FROM information_schema.tables").fetchall())
    assert kinds == {"int_a": "VIEW", "int_b": "VIEW", "m": "BASE TABLE"}
    (tmp_path / "marts" / "m.yml").write_text((tmp_path / "marts" / "m.yml").read_text() + "computed_once: true\n")
    with pytest.raises(ModelError, match="only intermediate models"):
        load_models(tmp_path)


def test_every_model_gives_no_rows_and_its_declared_columns_when_its_inputs_hold_none():
    """run_models creates a model whose inputs hold no rows from its YAML, without running it: that is the same
    table only if the model's SQL gives no rows from empty inputs, with the columns and types the YAML declares.
    Checked here for every model by running it on empty tables (a fixture that never feeds a model checks
    neither)."""
    models = load_models()
    with duckdb.connect() as con:
        for name, spec in catalog().items():
            con.register("empty_rows", spec.schema.empty_table())
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM empty_rows")
            con.unregister("empty_rows")
        set_run_options(con, {})
        create_macros(con)
        run_models(con, models)  # every model run
        for model in models:
            assert con.execute(f"SELECT count(*) FROM {model.name}").fetchone()[0] == 0, (
                f"{model.name} gives rows from empty inputs: runs that skip it would lose them")
            actual = [(c, t) for c, t, *_ in con.execute(f"DESCRIBE {model.name}").fetchall()]
            assert actual == [(c.name, c.type) for c in model.columns], model.name


def test_a_model_whose_inputs_hold_no_rows_is_created_empty_without_running(tmp_path):
    _mini_library(tmp_path, {"staging/stg_host_op": ("SELECT rank::INTEGER AS x FROM {{ source('host_op') }}", ""),
                             "marts/a": ("SELECT x FROM {{ ref('stg_host_op') }}", ""),
                             "marts/b": ("SELECT CAST(error('b ran') AS INTEGER) AS x FROM {{ ref('a') }}", ""),
                             "marts/c": ("SELECT 7 AS x", "")})
    models = load_models(tmp_path)
    with duckdb.connect() as con:
        con.execute("CREATE TABLE host_op AS SELECT 1 AS rank WHERE false")
        set_run_options(con, {})
        run = run_models(con, models, {"host_op": 0})
        assert run.skipped == ["stg_host_op", "a", "b"] and set(run.seconds) == {"c"}
        assert {"host_op", "stg_host_op", "a", "b"} <= run.empty and "c" not in run.empty
        kinds = dict(con.sql("SELECT table_name, table_type FROM information_schema.tables").fetchall())
        assert kinds == {"host_op": "BASE TABLE", "stg_host_op": "VIEW", "a": "BASE TABLE", "b": "BASE TABLE",
                         "c": "BASE TABLE", "run_option": "BASE TABLE"}
        assert con.sql("DESCRIBE b").fetchall()[0][:2] == ("x", "INTEGER")
        assert con.sql("SELECT * FROM c").fetchall() == [(7,)]
        con.execute("INSERT INTO host_op VALUES (3)")
        with pytest.raises(duckdb.Error, match="b ran"):  # with a row, every model runs
            run_models(con, models, {"host_op": 1})


def test_every_model_and_column_is_documented():
    for model in load_models():
        assert len(model.description) > 20 and "TODO" not in model.description, model.name
        for column in model.columns:
            assert column.description and "TODO" not in column.description, (model.name, column.name)
        if model.layer in ("marts", "reports"):  # `grain: []` states that rows may repeat (the description says why)
            doc = yaml.safe_load((REPO / "sql" / model.layer / f"{model.name}.yml").read_text())
            assert model.grain or doc.get("grain") == [], f"{model.name}: a mart or report states its grain"
        assert set(model.grain) <= {c.name for c in model.columns}, model.name


def test_units_follow_one_convention():
    """ns for times, bytes for sizes, 0-1 shares, counts: stated in the YAML, matching the column name."""
    columns = [(f"table {t}", f.name, spec.units.get(f.name)) for t, spec in catalog().items() for f in spec.schema]
    # compatibility reports keep the units of the tool they imitate (MindSpore's ms and us)
    columns += [(m.name, c.name, c.unit) for m in load_models() if m.layer != "reports" for c in m.columns]
    problems = [f"{where}.{name}: {problem}" for where, name, unit in columns
                if (problem := _unit_problem(name, unit)) is not None]
    assert not problems, problems


def _unit_problem(name: str, unit: str | None) -> str | None:
    """What breaks the unit convention in a column `name` documented with `unit`, else None."""
    if name.endswith(FORBIDDEN_SUFFIXES) or name in FORBIDDEN_NAMES:
        return f"a unit other than {', '.join(UNITS)} in the name"
    if unit is not None and unit not in UNITS:
        return f"unit {unit!r} is not one of {UNITS}"
    for suffix, required in UNIT_SUFFIXES.items():
        if (name.endswith(suffix) or name == suffix[1:]) and unit != required:  # wait_ns, and a bare share
            return f"named {suffix} but documented as {unit}"
    return None


@pytest.mark.parametrize(("name", "unit"), [
    ("wait_ms", "ns"), ("avg_cpu_pct", None), ("queue_utilization_pct", "share"), ("memory_mb", "bytes"),
    ("sample_interval_us", None), ("hit_rate", "share"), ("percent", None), ("peak_kb", "bytes"),
    ("busy_share", None), ("busy_share", "ratio"), ("victim_ratio", "share"), ("wait_ns", "ms"), ("size_bytes", "count"),
    ("share", None), ("read_bytes_per_second", None), ("peak_flop_per_second", "bytes_per_second"),
    ("ridge_flop_per_byte", "ratio"), ("achieved_flop_per_second", None),
])
def test_the_unit_convention_refuses_other_units(name: str, unit: str | None) -> None:
    """The names MindData and msprof use for their own units (ms, percent, MB, rate) fail the convention test."""
    assert _unit_problem(name, unit) is not None


def test_the_unit_convention_accepts_its_units() -> None:
    for name, unit in [("wait_ns", "ns"), ("memory_bytes", "bytes"), ("queue_usage_share", "share"),
                       ("avg_victim_ratio", "ratio"), ("avg_cpus", "count"), ("op_name", None),
                       ("share", "share"), ("bus_bandwidth_bytes_per_second", "bytes_per_second"),
                       ("peak_flop_per_second", "flop_per_second"), ("intensity_flop_per_byte", "flop_per_byte")]:
        assert _unit_problem(name, unit) is None, name


def test_documented_columns_are_the_columns_of_every_fixture_output(outputs):
    for name, out in outputs.items():
        with duckdb.connect(str(out / "profile.duckdb"), read_only=True) as con:
            for model in load_models():
                actual = [(c, t) for c, t, *_ in con.execute(f"DESCRIBE {model.name}").fetchall()]
                assert actual == [(c.name, c.type) for c in model.columns], (name, model.name)


def test_every_table_model_and_column_carries_its_documentation_in_the_saved_profile(outputs):
    """profile.duckdb holds the documentation (written while the exports run): any DuckDB client shows each
    table's and column's meaning, the unit in brackets."""
    docs = documentation()
    with duckdb.connect(str(outputs["kineto"] / "profile.duckdb"), read_only=True) as con:
        tables = dict(con.execute("SELECT table_name, comment FROM duckdb_tables() WHERE NOT temporary UNION ALL "
                                  "SELECT view_name, comment FROM duckdb_views() WHERE NOT internal").fetchall())
        columns = {(t, c): comment for t, c, comment in con.execute(
            "SELECT table_name, column_name, comment FROM duckdb_columns() WHERE NOT internal").fetchall()}
    assert set(docs) <= set(tables)
    for name, entry in docs.items():
        assert tables[name] == entry["description"], name
        for column in entry["columns"]:
            unit = f" [{column['unit']}]" if column["unit"] else ""
            assert columns[name, column["name"]] == column["description"] + unit, (name, column["name"])


@pytest.mark.parametrize("fixture", FIXTURE_RUNS)
def test_the_models_data_tests_pass_on_every_fixture(outputs, fixture):
    with duckdb.connect(str(outputs[fixture] / "profile.duckdb"), read_only=True) as con:
        failures = check_models(con)
    assert not failures, "\n".join(map(str, failures))


@pytest.mark.parametrize("fixture", FIXTURE_RUNS)
def test_a_model_whose_required_input_is_empty_gives_no_rows_when_run(outputs, fixture):
    """A model's `requires` (the inputs without which it holds no row) lets the run create it empty without its query:
    where one of them is empty in a fixture's output, the model's own query run there gives no row either."""
    with duckdb.connect(str(outputs[fixture] / "profile.duckdb"), read_only=True) as con:
        assert unmet_requirements(con) == []


def test_the_loader_refuses_a_requirement_the_model_does_not_read(tmp_path):
    _mini_library(tmp_path, {"marts/a": ("SELECT 1 AS x", ""),
                             "marts/b": ("SELECT 2 AS x", "requires: [a]\n")})
    with pytest.raises(ModelError, match=r"b: requires \['a'\], which it does not read"):
        load_models(tmp_path)


def _shares(value, path: str = "") -> list[tuple[str, float]]:
    """Every number under a key that names a share (`share`, `*_share`) in a JSON document, with its path."""
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in
                (([(f"{path}.{key}", item)] if (key == "share" or key.endswith("_share")) and isinstance(item, (int, float))
                  else []) + _shares(item, f"{path}.{key}"))]
    if isinstance(value, list):
        return [found for index, item in enumerate(value) for found in _shares(item, f"{path}[{index}]")]
    return []


@pytest.mark.parametrize("fixture", FIXTURE_RUNS)
def test_what_the_console_prints_holds_no_share_outside_zero_and_one(outputs, fixture):
    """The console's summary tables and the --json run summary are reports/summary.json: every share in it (op type,
    op and kernel shares, the input pipeline's wait share) lies in [0, 1]."""
    shares = _shares(json.loads((outputs[fixture] / "reports" / "summary.json").read_text()))
    assert all(0 <= value <= 1 for _, value in shares), [s for s in shares if not 0 <= s[1] <= 1]


def test_a_data_test_that_breaks_is_reported(tmp_path):
    _mini_library(tmp_path, {"marts/m": ("SELECT * FROM (VALUES (1), (1), (NULL)) t(x)", "grain: [x]\n")})
    (tmp_path / "marts" / "m.yml").write_text(
        "description: One row per thing.\ngrain: [x]\ncolumns:\n"
        "  - {name: x, type: INTEGER, description: n, tests: [not_null, {range: [2, null]}]}\n")
    models = load_models(tmp_path)
    with duckdb.connect() as con:
        run_models(con, models)
        found = {(f.test, f.rows) for f in check_models(con, models)}
    assert found == {("unique grain (x)", 1), ("x not null", 1), ("x within [2, None]", 2)}


def test_an_invariant_that_breaks_is_reported_by_row_and_by_group(tmp_path):
    _mini_library(tmp_path, {"marts/m": ("SELECT * FROM (VALUES (1, 2, 3, 'a'), (2, 2, 3, 'a'), (NULL, 1, 1, 'b')) "
                                         "t(x, part, whole, g)", "")})
    (tmp_path / "marts" / "m.yml").write_text(
        "description: One row per thing.\ncolumns:\n"
        "  - {name: x, type: INTEGER, description: n}\n  - {name: part, type: INTEGER, description: n}\n"
        "  - {name: whole, type: INTEGER, description: n}\n  - {name: g, type: VARCHAR, description: n}\n"
        "tests:\n  - {expression: 'x + part <= whole', why: the parts fit the whole}\n"
        "  - {expression: 'sum(part) <= 3', why: the parts of a group fit, per: [g]}\n")
    models = load_models(tmp_path)
    with duckdb.connect() as con:
        run_models(con, models)
        found = {(f.test, f.rows) for f in check_models(con, models)}
    # the NULL row holds (nothing to compare); group a sums 4
    assert found == {("the parts fit the whole (x + part <= whole)", 1),
                     ("the parts of a group fit (sum(part) <= 3 per g)", 1)}


@pytest.mark.parametrize("test", ["not a mapping", "{expression: x > 0}", "{expression: x > 0, why: w, pre: [x]}"])
def test_the_loader_refuses_a_model_invariant_that_is_not_one(tmp_path, test):
    _mini_library(tmp_path, {"marts/m": ("SELECT 1 AS x", "")})
    with (tmp_path / "marts" / "m.yml").open("a") as doc:
        doc.write(f"tests:\n  - {test}\n")
    with pytest.raises(ModelError, match="invariant"):
        load_models(tmp_path)


def test_the_saved_profile_opens_from_any_folder_and_after_a_move(outputs, tmp_path, monkeypatch):
    moved = tmp_path / "elsewhere"
    shutil.copytree(outputs["mindspore_gpu/two_ranks"], moved)
    monkeypatch.chdir(tmp_path)
    with duckdb.connect(str(moved / "profile.duckdb"), read_only=True) as con:
        for name in list(catalog()) + [m.name for m in load_models()]:
            con.execute(f"SELECT count(*) FROM {name}").fetchone()
        assert con.execute("SELECT count(*) FROM host_op").fetchone()[0] > 0


def test_shared_column_meanings_are_used():
    shared = yaml.safe_load((REPO / "sql" / "columns.yml").read_text())
    used = {c.name for m in load_models() for c in m.columns}
    assert set(shared) <= used, set(shared) - used
    assert all(re.fullmatch(r"[a-z_]+", name) for name in shared)


def test_no_multi_line_sql_in_python_outside_the_readers():
    """Analysis SQL lives in sql/ (models, macros, and the few exporter queries of sql/queries); Python keeps
    one-line glue. The readers (profpipe/ingest) are the exception: their queries parse their own format in
    their scratch database and belong to the parser."""
    import ast

    found = []
    for path in sorted((REPO / "profpipe").rglob("*.py")):
        if "ingest" in path.relative_to(REPO / "profpipe").parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and node.body
                      and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                text = node.value
            else:
                continue
            if "\n" in text.strip() and re.search(r"\b(SELECT|WITH|CREATE (TEMP )?TABLE|COPY|INSERT)\b", text) \
                    and re.search(r"\b(FROM|AS)\b", text):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert found == [], found
