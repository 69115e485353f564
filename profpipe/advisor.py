"""The advisor: after the models, the rules of sql/advisor run over the marts and give the run's findings.

Each rule is one SQL file, `sql/advisor/<rule_id>.sql`, with a YAML beside it (title, severity, the metric in words
with its unit, the threshold, its direction and where it comes from, the marts it needs, why it may not apply, and
a one-paragraph suggestion). A rule reads marts only, named with `{{ ref('<mart>') }}`, and its threshold is written
`{{ threshold }}`; rendered, the SQL runs as it is on OUT/profile.duckdb, so a finding's evidence_sql is the query
that gives its evidence rows. It returns one row per (rank, capture, step) or other unit on which it fires: the
columns rank, capture and step first (NULL where the rule has no such key), then `value` (the metric), then
anything that explains it.

The runner (`profpipe/run.py`) calls `advise` on the output's connection after the models, saves the findings as
the table `advisor_finding` (so a batch publishes them per run) and, for `analyse`, writes OUT/findings.json
(schemas/findings.schema.json). The console prints the top findings; `profpipe advise OUT` reads the table back.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from . import models
from .errors import first_line_of
from .models import ModelError, library_files, load_models
from .resources import cached, data_dir, json_schema_validator, read_yaml

#: The table of profile.duckdb (and of the warehouse, per run) holding one row per rule checked.
ADVISOR_TABLE = "advisor_finding"
#: The version of findings.json's layout (schemas/findings.schema.json); raised when a field changes meaning.
SCHEMA_VERSION = 1
#: Evidence rows kept per finding (worst first); the rule's SQL gives them all.
EVIDENCE_ROWS = 20
SEVERITIES = ("high", "medium", "low")
#: The columns every rule returns first, in this order.
KEY_COLUMNS = ("rank", "capture", "step", "value")
_REF = re.compile(r"\{\{\s*ref\(\s*'([A-Za-z_][A-Za-z0-9_]*)'\s*\)\s*\}\}")
_THRESHOLD = re.compile(r"\{\{\s*threshold\s*\}\}")
_YAML_KEYS = {"title", "severity", "metric", "unit", "threshold", "direction", "threshold_source", "requires",
              "not_applicable", "suggestion"}


@dataclass(frozen=True)
class Rule:
    """One rule of sql/advisor: its documentation and its rendered SQL."""

    id: str
    title: str
    severity: str
    metric: str
    unit: str
    threshold: float | None
    #: "above": fires where the metric exceeds the threshold (worst = largest); "below": where it falls short.
    direction: str
    threshold_source: str
    #: The marts whose rows make the rule applicable (any one of them with rows).
    requires: tuple[str, ...]
    not_applicable: str
    suggestion: str
    sql: str
    reads: frozenset[str]


@dataclass
class Finding:
    """What one rule said about one run: fired, passed, not applicable (and why), or error."""

    rule_id: str
    title: str
    severity: str
    status: str
    reason: str | None
    metric: str
    unit: str
    threshold: float | None
    direction: str
    threshold_source: str
    worst_value: float | None
    ranks: list[int]
    steps: list[int]
    rank_count: int
    step_count: int
    fired_rows: int
    suggestion: str
    evidence_sql: str
    evidence_columns: list[str]
    evidence: list[dict[str, Any]]


def load_rules(sql_dir: Path | None = None) -> list[Rule]:
    """Every rule of `sql_dir`/advisor (default: the packaged sql/), checked: YAML keys, severity, direction, and
    that the SQL reads marts only, by ref()."""
    return list(_packaged_rules() if sql_dir is None else _load_rules(sql_dir))


@lru_cache(maxsize=1)
def _packaged_rules() -> tuple[Rule, ...]:
    return cached("advisor-rules", library_files(Path(__file__), Path(models.__file__)),
                  lambda: _load_rules(data_dir("sql")))


def _load_rules(root: Path) -> tuple[Rule, ...]:
    marts = {m.name for m in load_models(None if root == data_dir("sql") else root) if m.layer == "marts"}
    rules = []
    for path in sorted((root / "advisor").glob("*.sql")):
        doc_path = path.with_suffix(".yml")
        if not doc_path.is_file():
            raise ModelError(f"advisor rule {path.stem}: no {doc_path.name} beside it")
        doc = read_yaml(doc_path) or {}
        if set(doc) != _YAML_KEYS:
            raise ModelError(f"{doc_path}: needs exactly the keys {sorted(_YAML_KEYS)} "
                             f"(missing {sorted(_YAML_KEYS - set(doc))}, unknown {sorted(set(doc) - _YAML_KEYS)})")
        if doc["severity"] not in SEVERITIES or doc["direction"] not in ("above", "below"):
            raise ModelError(f"{doc_path}: severity is one of {SEVERITIES}, direction above or below")
        raw = path.read_text(encoding="utf-8")
        reads = frozenset(_REF.findall(raw))
        if bad := sorted((reads | set(doc["requires"])) - marts):
            raise ModelError(f"advisor rule {path.stem}: reads {bad[0]}, which is no mart (rules read marts only)")
        threshold = None if doc["threshold"] is None else float(doc["threshold"])
        if _THRESHOLD.search(raw) and threshold is None:
            raise ModelError(f"advisor rule {path.stem}: its SQL uses {{{{ threshold }}}} but the YAML gives none")
        sql = _REF.sub(lambda m: m.group(1), raw)
        sql = _THRESHOLD.sub(lambda _: _number(threshold), sql).strip().rstrip(";")
        rules.append(Rule(path.stem, str(doc["title"]), doc["severity"], " ".join(str(doc["metric"]).split()),
                          str(doc["unit"]), threshold, doc["direction"], " ".join(str(doc["threshold_source"]).split()),
                          tuple(doc["requires"]), " ".join(str(doc["not_applicable"]).split()),
                          " ".join(str(doc["suggestion"]).split()), sql, reads))
    return tuple(rules)


def _number(value: float | None) -> str:
    """A threshold as SQL writes it: an integer where it is whole (20000, not 20000.0)."""
    assert value is not None
    return str(int(value)) if value.is_integer() else repr(value)


def rules_reading(built: frozenset[str] | None) -> list[Rule]:
    """The rules whose marts (those they read and those they require) are all among the models `built` (--select);
    every rule for None."""
    return [rule for rule in load_rules() if built is None or (rule.reads | set(rule.requires)) <= built]


def advise(con: duckdb.DuckDBPyConnection, rules: list[Rule] | None = None) -> list[Finding]:
    """Run every rule on `con` (a profile.duckdb, or one run of a warehouse); the findings, fired ones first by
    severity, then the others, each group in rule order."""
    findings = [_check(con, rule) for rule in (load_rules() if rules is None else rules)]
    order = {status: i for i, status in enumerate(("fired", "error", "passed", "not_applicable"))}
    return sorted(findings, key=lambda f: (order[f.status], SEVERITIES.index(f.severity), f.rule_id))


def _check(con: duckdb.DuckDBPyConnection, rule: Rule) -> Finding:
    base = {"rule_id": rule.id, "title": rule.title, "severity": rule.severity, "metric": rule.metric,
            "unit": rule.unit, "threshold": rule.threshold, "direction": rule.direction,
            "threshold_source": rule.threshold_source, "suggestion": rule.suggestion, "evidence_sql": rule.sql}
    empty = {"worst_value": None, "ranks": [], "steps": [], "rank_count": 0, "step_count": 0, "fired_rows": 0,
             "evidence_columns": [], "evidence": []}
    try:
        if not any(con.execute(f"SELECT EXISTS (SELECT 1 FROM {mart})").fetchall()[0][0] for mart in rule.requires):
            return Finding(**base, **empty, status="not_applicable", reason=f"not applicable: {rule.not_applicable}")
        result = con.execute(f"SELECT * FROM ({rule.sql}) ORDER BY {_order(con, rule)}")
        columns = [d[0] for d in result.description]
        rows = result.fetchall()
    except duckdb.Error as exc:
        return Finding(**base, **empty, status="error", reason=f"the rule failed: {first_line_of(exc)}")
    if tuple(columns[:4]) != KEY_COLUMNS:
        raise ModelError(f"advisor rule {rule.id}: returns {columns[:4]}, not {list(KEY_COLUMNS)} first")
    if not rows:
        return Finding(**base, **empty, status="passed", reason=None)
    ranks = sorted({row[0] for row in rows if row[0] is not None})
    steps = sorted({row[2] for row in rows if row[2] is not None})
    values = [row[3] for row in rows if row[3] is not None]
    worst = (max if rule.direction == "above" else min)(values) if values else None
    return Finding(**base, status="fired", reason=None, worst_value=None if worst is None else float(worst),
                   ranks=ranks, steps=steps, rank_count=len(ranks), step_count=len(steps), fired_rows=len(rows),
                   evidence_columns=columns,
                   evidence=[dict(zip(columns, map(_plain, row))) for row in rows[:EVIDENCE_ROWS]])


def _order(con: duckdb.DuckDBPyConnection, rule: Rule) -> str:
    """Worst value first, then rank, capture, step and every other column: a stable order of the evidence."""
    empty = con.execute(f"SELECT * FROM ({rule.sql}) LIMIT 0")
    width = len(empty.description)
    empty.fetchall()
    direction = "DESC" if rule.direction == "above" else "ASC"
    return ", ".join([f"4 {direction} NULLS LAST", "1", "2", "3", *(str(i) for i in range(5, width + 1))])


def _plain(value: Any) -> Any:
    """A value as JSON holds it: whole numbers as int, NaN and infinities as null, anything else as text."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(value, "as_integer_ratio"):  # Decimal
        return float(value)
    return str(value)


def save_findings(con: duckdb.DuckDBPyConnection, findings: list[Finding]) -> None:
    """The table advisor_finding in `con`: one row per rule checked, its evidence rows as JSON text."""
    rows = []
    for finding in findings:
        row = asdict(finding)
        row["evidence_columns"] = finding.evidence_columns
        row["evidence_json"] = json.dumps(row.pop("evidence"))
        rows.append(row)
    table = pa.Table.from_pylist(rows, schema=_TABLE_SCHEMA)
    con.register("advisor_rows", table)
    con.execute(f"CREATE OR REPLACE TABLE {ADVISOR_TABLE} AS SELECT * FROM advisor_rows")
    con.unregister("advisor_rows")
    con.execute(f"COMMENT ON TABLE {ADVISOR_TABLE} IS 'One row per advisor rule checked on this run (sql/advisor): "
                "fired, passed, not applicable or error, with the ranks and steps it fired on and its evidence'")
    for name, meaning in TABLE_DOCS.items():
        con.execute(f"COMMENT ON COLUMN {ADVISOR_TABLE}.{name} IS '{meaning.replace(chr(39), chr(39) * 2)}'")


#: advisor_finding's columns and their meaning (also findings.json's fields; evidence_json there is `evidence`).
TABLE_DOCS = {
    "rule_id": "the rule (sql/advisor/<rule_id>.sql); stable across versions",
    "title": "what the rule looks for, in a few words",
    "severity": "high, medium or low",
    "status": "fired, passed, not_applicable (the marts it needs have no rows for this dump) or error",
    "reason": "why the rule is not applicable or failed; NULL when it ran",
    "metric": "what the rule measures, in words",
    "unit": "the unit of the metric, threshold and worst_value: share (fraction 0-1), ns, bytes or count",
    "threshold": "the limit the metric is compared with (NULL: the rows carry their own)",
    "direction": "above: fires where the metric exceeds the threshold; below: where it falls short of it",
    "threshold_source": "where the threshold comes from (MindInsight, msprof-analyze, HTA, or profpipe's reasoning)",
    "worst_value": "the worst metric value over the rows it fired on [in unit]",
    "ranks": "every rank it fired on",
    "steps": "every step it fired on (empty for rules that are not per step)",
    "rank_count": "ranks it fired on [count]",
    "step_count": "distinct steps it fired on [count]",
    "fired_rows": "rows of its evidence SQL: the (rank, capture, step or stream, link, op) units it fired on [count]",
    "suggestion": "what to do about it",
    "evidence_sql": "the rule's SQL: run it on profile.duckdb for every evidence row",
    "evidence_columns": "the columns of the evidence rows",
    "evidence_json": "the worst evidence rows (at most 20) as a JSON array of objects",
}
_TABLE_SCHEMA = pa.schema([
    ("rule_id", pa.string()), ("title", pa.string()), ("severity", pa.string()), ("status", pa.string()),
    ("reason", pa.string()), ("metric", pa.string()), ("unit", pa.string()), ("threshold", pa.float64()),
    ("direction", pa.string()), ("threshold_source", pa.string()), ("worst_value", pa.float64()),
    ("ranks", pa.list_(pa.int32())), ("steps", pa.list_(pa.int64())), ("rank_count", pa.int64()),
    ("step_count", pa.int64()), ("fired_rows", pa.int64()), ("suggestion", pa.string()), ("evidence_sql", pa.string()),
    ("evidence_columns", pa.list_(pa.string())), ("evidence_json", pa.string()),
])


def findings_document(findings: list[Finding], version: str) -> dict[str, Any]:
    """findings.json's object: the fired findings in full and every rule checked with its status."""
    return {"schema_version": SCHEMA_VERSION, "profpipe_version": version,
            "findings": [asdict(f) for f in findings if f.status == "fired"],
            "checked": [{"rule_id": f.rule_id, "title": f.title, "severity": f.severity, "status": f.status,
                         "reason": f.reason} for f in findings]}


def write_findings(document: dict[str, Any], path: Path, indent: int | None = 2) -> None:
    """Validate findings.json against schemas/findings.schema.json and write it."""
    json_schema_validator("findings.schema.json").validate(document)
    path.write_text(json.dumps(document, indent=indent) + "\n", encoding="utf-8")


def read_findings(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """The rows of advisor_finding in `con` (an output's profile.duckdb, or a warehouse with its `run` column), fired
    first by severity, evidence_json decoded as `evidence`."""
    result = con.execute(f"SELECT * FROM {ADVISOR_TABLE} ORDER BY status <> 'fired', "
                         "list_position(['high', 'medium', 'low'], severity), rule_id")
    names = [d[0] for d in result.description]
    rows = [dict(zip(names, row)) for row in result.fetchall()]
    for row in rows:
        row["evidence"] = json.loads(row.pop("evidence_json") or "[]")
    if rows and "run" in rows[0]:
        rows.sort(key=lambda r: (r["run"], r["status"] != "fired"))
    return rows


def format_value(value: float | None, unit: str) -> str:
    """A metric value for people: shares in percent, ns in ms or µs, bytes in MiB."""
    if value is None:
        return "-"
    if unit == "share":
        return f"{100 * value:.1f}%"
    if unit == "ns":
        return f"{value / 1e6:.3f} ms" if abs(value) >= 1e6 else f"{value / 1e3:.1f} us"
    if unit == "bytes":
        return f"{value / 2**20:.1f} MiB"
    return f"{value:g}"


def headline(finding: dict[str, Any]) -> str:
    """One line about a fired finding: its title, worst value and threshold."""
    limit = "" if finding["threshold"] is None else \
        f" ({finding['direction']} {format_value(finding['threshold'], finding['unit'])})"
    return f"{finding['title']}: worst {format_value(finding['worst_value'], finding['unit'])}{limit}"


def where(values: list[int], most: int = 6) -> str:
    """A list of ranks or steps, shortened: '0, 1, 2 ... (+5)'."""
    if not values:
        return "-"
    shown = ", ".join(map(str, values[:most]))
    return shown if len(values) <= most else f"{shown} ... (+{len(values) - most})"
