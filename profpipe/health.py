"""Trace health: the ledger of every value a reader dropped, repaired or doubted, and every source lost.

Readers report through a `Warn` callable (one per source, made by `HealthLedger.for_source`); the
runner adds what it decides about whole sources (skipped, superseded, not a regular file). At the end
of a run the ledger becomes the `trace_health` table (one row per source x check x action; the column is check_name, as CHECK is an SQL keyword), the
`health` block of summary.json, the console's health summary and the run's exit code: a run in which
a number was dropped, clamped or repaired is "partial", never silent.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pyarrow as pa

#: What a check found. Readers pick one; "other" is for problems no check names yet.
CHECKS: dict[str, str] = {
    "truncated": "a file ends inside a record, a line or a JSON value; what follows is missing",
    "malformed_record": "a record, line or row that cannot be parsed as its format",
    "non_finite": "NaN or infinity where a number is expected",
    "out_of_range": "a number too large, too small or negative for what it measures",
    "negative_duration": "an interval that ends before it starts, or a negative duration",
    "duplicate_record": "the same record (or key) more than once",
    "unknown_tag": "a tag, enum value or kind the format does not define",
    "conflicting_entry": "a dictionary (hash, name table) maps one key to different values, or two different "
                         "sources claim one rank over the same time",
    "unlinked": "a record that names something (op, task, stream) that does not exist",
    "bad_encoding": "bytes that are not valid UTF-8",
    "missing_file": "a file the format expects is absent; what it would give is missing",
    "clock": "times on a clock that cannot be aligned with the run's, or that disagree",
    "superseded": "a source left out because another holds the same data (more completely, or byte for byte)",
    "source_failed": "a whole source that could not be read; its rank has nothing from it",
    "not_regular_file": "an input path that is a FIFO, device, socket or broken link; never opened",
    "unread_file": "files of a known profiler that profpipe does not read and whose data no source read gives "
                   "(profpipe/unread.py: the kinds, and how to export them to a form profpipe reads)",
    "ambiguous": "the data allows several readings; the one taken is named",
    "model_test": "a number the models computed breaks a data test of its model's YAML (a share outside 0-1, parts "
                  "above their whole: profpipe/model_checks.py); the model and a breaking row are named",
    "other": "a recoverable problem not covered by another check",
}
#: What profpipe did about it. The first four change or lose numbers, the last names numbers not to trust: the run is
#: partial.
ACTIONS: dict[str, str] = {
    "dropped": "the rows were left out of every table",
    "clamped": "values were limited to the valid range",
    "repaired": "values were rewritten (e.g. bad bytes as U+FFFD, a missing time filled)",
    "source_skipped": "the whole source was left out",
    "superseded": "the source was left out in favour of one holding the same data (more complete, or its original)",
    "excluded": "records the format's own tools leave out by design (e.g. Ascend tasks of no op, which are the "
                "profiler's own); nothing the user measured is lost",
    "kept": "the data was kept as it is; the row is a warning",
    "flagged": "numbers in the output break their model's contract; they are kept as computed and named, not to be "
               "trusted",
}
LOSSY_ACTIONS = frozenset({"dropped", "clamped", "repaired", "source_skipped", "flagged"})


class Warn(Protocol):
    """How a reader reports a recoverable problem of its source: a sentence, and what kind it is."""

    def __call__(self, message: str, *, check: str = "other", action: str = "kept", rows: int | None = None,
                 path: str | Path | None = None, offset: int | None = None, line: int | None = None,
                 example: str | None = None, tables: str | None = None) -> None: ...


@dataclass(frozen=True)
class HealthEvent:
    """One report: what was found in which source, how many rows it touched and what was done."""

    source: str
    rank: int
    check: str
    action: str
    message: str
    rows: int | None = None
    path: str | None = None
    offset: int | None = None
    line: int | None = None
    example: str | None = None
    tables: str | None = None

    @property
    def lossy(self) -> bool:
        return self.action in LOSSY_ACTIONS


class HealthLedger:
    """Collects the health events of one run, in the order they were reported."""

    def __init__(self) -> None:
        self.events: list[HealthEvent] = []

    def for_source(self, source: str, rank: int) -> Warn:
        """The Warn callable a reader of `source` (its location) on `rank` reports through."""

        def warn(message: str, *, check: str = "other", action: str = "kept", rows: int | None = None,
                 path: str | Path | None = None, offset: int | None = None, line: int | None = None,
                 example: str | None = None, tables: str | None = None) -> None:
            self.add(HealthEvent(source=source, rank=rank, check=check, action=action, message=message,
                                 rows=rows, path=None if path is None else str(path), offset=offset, line=line,
                                 example=None if example is None else example[:200], tables=tables))

        return warn

    def add(self, event: HealthEvent) -> None:
        if event.check not in CHECKS:
            raise ValueError(f"unknown trace-health check {event.check!r}")
        if event.action not in ACTIONS:
            raise ValueError(f"unknown trace-health action {event.action!r}")
        self.events.append(event)

    @property
    def lossy(self) -> list[HealthEvent]:
        """The events that dropped, clamped or repaired a number, or lost a source."""
        return [e for e in self.events if e.lossy]

    def rows(self) -> list[dict[str, object]]:
        """One row per source x check x action: counts added up, the first file, place and example kept."""
        grouped: dict[tuple[str, str, str], dict[str, object]] = {}
        for event in self.events:
            key = (event.source, event.check, event.action)
            row = grouped.get(key)
            if row is None:
                grouped[key] = {"rank": event.rank, "source": event.source, "check_name": event.check,
                                "action": event.action, "events": 1, "rows": event.rows,
                                "first_file": event.path, "first_offset": event.offset, "first_line": event.line,
                                "example": event.example, "tables": event.tables, "message": event.message}
                continue
            row["events"] = int(row["events"]) + 1
            if event.rows is not None:
                row["rows"] = (row["rows"] or 0) + event.rows
            for column, value in (("first_file", event.path), ("first_offset", event.offset),
                                  ("first_line", event.line), ("example", event.example), ("tables", event.tables)):
                if row[column] is None and value is not None:
                    row[column] = value
        return list(grouped.values())

    def table(self) -> pa.Table:
        """The trace_health table (see schemas/tables.json)."""
        from .tables import catalog

        schema = catalog()["trace_health"].schema
        rows = self.rows()
        return pa.Table.from_pylist(rows, schema=schema) if rows else schema.empty_table()

    def summary(self) -> dict[str, object]:
        """The health block of summary.json: totals and the ledger's rows."""
        rows = self.rows()
        return {"partial": bool(self.lossy), "events": len(self.events),
                "checks": sorted({str(r["check_name"]) for r in rows}), "rows": rows}


def describe(rows: Iterable[dict[str, object]], limit: int = 8) -> list[str]:
    """Short human lines for the console: one per ledger row, the lossy ones first."""
    ordered = sorted(rows, key=lambda r: (r["action"] not in LOSSY_ACTIONS, r["rank"], str(r["check_name"])))
    lines = []
    for row in ordered[:limit]:
        touched = "" if row["rows"] is None else f", {row['rows']} rows"
        where = ""
        if row["first_file"] and str(row["first_file"]) not in str(row["message"]):
            where = f" ({row['first_file']}"
            where += f", line {row['first_line']}" if row["first_line"] is not None else ""
            where += f", byte {row['first_offset']}" if row["first_offset"] is not None else ""
            where += ")"
        lines.append(f"rank {row['rank']}: {row['check_name']} -> {row['action']}{touched}: {row['message']}{where}")
    if len(ordered) > limit:
        lines.append(f"... and {len(ordered) - limit} more")
    return lines
