"""Search ops and kernels by name or type, over an analysis's marts (`profpipe search`, `profpipe.search`).

Where it sits: after the pipeline, beside `profpipe query`: it reads the op and kernel marts of an output folder's
profile.duckdb (or of every run of a warehouse) and ranks what matches a term. MindInsight's op table filters with
`partial_match_str_in` on op_name / op_type (a plain, case-sensitive substring test, results in table order);
profpipe matches case-insensitively and ranks the matches:

1. exact: the full name, the short name (after the last '/') or the type equals the term;
2. prefix: one of them starts with the term;
3. substring: one of them holds the term;
4. fuzzy: the term's characters appear in that order in the full name or the type (a subsequence: `cv2d` finds
   Conv2D);

then by device time (most first; ops without device time by their own time), then by name and rank. The term is
bound as a SQL parameter, never written into the SQL; LIKE's wildcards in it are escaped.

What is searched (the marts an output has; kind `op` or `kernel`):
- op: `op_detail_stats` (MindSpore CPU/GPU ops: type op_type, calls occurrences, device time the op's own where
  side is Device, else the device time attributed to it), `device_op_stats` (Ascend ops timed by their device
  tasks), `host_op_stats` (PyTorch / Paddle / NVTX host ops: type the category, device time what they launched);
- kernel: `kernel_stats` summed over streams per rank and name, matched by name only (its type column shows the
  op most of its time belongs to, which is not searched).
"""
from __future__ import annotations

from typing import Any

import duckdb

from .models import query

KINDS = ("op", "kernel", "all")
#: Rows the search returns unless told otherwise.
DEFAULT_LIMIT = 20
MATCHES = ("exact", "prefix", "substring", "fuzzy")

#: The marts searched, each by its query sql/queries/search_<mart>.sql, and the kind of what it holds. An op in
#: several (MindSpore's ops are in op_detail_stats and host_op_stats, PyTorch's too) is one row: the mart of the
#: lowest priority in its query gives type, calls and time, the largest device time counts.
SOURCES = {"device_op_stats": "op", "op_detail_stats": "op", "host_op_stats": "op", "kernel_stats": "kernel"}


def fuzzy_pattern(term: str) -> str:
    """The LIKE pattern that finds `term`'s characters in order with anything between (LIKE's `%`, `_` and the
    escape character itself escaped)."""
    escaped = [("\\" + c) if c in "%_\\" else c for c in term]
    return "%" + "%".join(escaped) + "%"


def search(con: duckdb.DuckDBPyConnection, term: str, kind: str = "all", limit: int = DEFAULT_LIMIT) -> list[dict[str, Any]]:
    """Ops and kernels of the analysis open in `con` whose name or type matches `term` (case-insensitive), best
    first (see the module doc): dicts with kind, name, type, rank, calls, total_ns, device_ns, source (the marts,
    joined by '+', that hold it), side, match (exact, prefix, substring, fuzzy) and, in a warehouse, run. `limit` 0 returns every match."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    term = term.strip().lower()
    if not term:
        raise ValueError("the search term is empty")
    if limit < 0:
        raise ValueError("limit must be 0 (all matches) or more")
    present = {name for (name,) in con.execute(
        "SELECT table_name FROM duckdb_tables() UNION ALL SELECT view_name FROM duckdb_views()").fetchall()}
    wanted = [name for name, k in SOURCES.items() if name in present and kind in (k, "all")]
    if not wanted:
        return []
    run = "run" if all(_has_column(con, name, "run") for name in wanted) else "NULL::VARCHAR"
    candidates = " UNION ALL ".join(query(f"search_{name}").replace("{run}", run) for name in wanted)
    result = con.execute(query("search").replace("{candidates}", candidates),
                         {"term": term, "fuzzy": fuzzy_pattern(term), "limit": limit if limit else 2**62})
    names = [d[0] for d in result.description]
    rows = []
    for values in result.fetchall():
        row = dict(zip(names, values))
        row["match"] = MATCHES[row.pop("match_rank")]
        if run == "NULL::VARCHAR":
            del row["run"]
        rows.append(row)
    return rows


def _has_column(con: duckdb.DuckDBPyConnection, table: str, column: str) -> bool:
    return bool(con.execute("SELECT count(*) FROM duckdb_columns() WHERE table_name = ? AND column_name = ?",
                            [table, column]).fetchone()[0])
