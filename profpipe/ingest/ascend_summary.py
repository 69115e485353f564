"""Stage 2, ingest: family `ascend_summary`, the numbers the Ascend profiler tools derived themselves.

A torch_npu (`*_ascend_pt`) or MindSpore 2.5+ (`*_ascend_ms`) result folder keeps in ASCEND_PROFILER_OUTPUT/ the
tool's own step trace (step_trace_time.csv), communication summary (communication.json), rank-to-rank matrix
(communication_matrix.json) and, with the db export (or beside a text export in newer versions), analysis.db with the
same numbers (StepTraceTime, CommAnalyzerTime, CommAnalyzerBandwidth, CommAnalyzerMatrix). A trimmed cluster rank holds
nothing else. This reader turns them into the tables ascend_step_summary, ascend_comm_op_summary,
ascend_comm_link_summary and ascend_comm_group (shared/reference/formats-ascend-today.md sections 2.3, 3, 4.6-4.8).

Which file: analysis.db's table where it has one (its numbers are not quantized to the text tool's float µs), else the
text file. Units: step trace µs, communication ms (start timestamps µs), sizes MB = 10^6 bytes; every number is read as
the exact decimal its file holds (JSON numbers as their text, SQLite REALs as their shortest round-trip text) and scaled
to integer ns / bytes by the rule of units.py. Steps are written 50, "50" or "step50" (NULL: a capture without steps,
the key "step"); group ids stay strings (uint64 overflows int64). The source is read whenever its rank also has a full
export: the files are small (a row per step and per communication op, none per task), and they are the tool's own
numbers, kept apart from what profpipe derives from the events.

SQLite is opened read-only and immutable (as nsys.py does): nothing is written beside the input.
"""
from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from ..clocks import epoch_clock
from ..discover import Source
from ..health import Warn
from .run_info import ascend_framework, run_info
from .scratch import memory_database, open_sqlite
from .units import scaled_decimal

#: step_trace_time.csv column -> (analysis.db StepTraceTime column, ascend_step_summary column), in the files' order.
STEP_PHASES = {
    "Computing": ("computing", "computing_ns"),
    "Communication(Not Overlapped)": ("communication_not_overlapped", "communication_not_overlapped_ns"),
    "Overlapped": ("overlapped", "overlapped_ns"),
    "Communication": ("communication", "communication_ns"),
    "Free": ("free", "free_ns"),
    "Stage": ("stage", "stage_ns"),
    "Bubble": ("bubble", "bubble_ns"),
    "Communication(Not Overlapped and Exclude Receive)": ("communication_not_overlapped_and_exclude_receive",
                                                          "communication_not_overlapped_exclude_receive_ns"),
    "Preparing": ("preparing", "preparing_ns"),
}
#: communication.json "Communication Time Info" (ms) -> (CommAnalyzerTime column, ascend_comm_op_summary column).
COMM_TIMES = {
    "Elapse Time(ms)": ("elapse_time", "elapse_ns"),
    "Transit Time(ms)": ("transit_time", "transit_ns"),
    "Wait Time(ms)": ("wait_time", "wait_ns"),
    "Synchronization Time(ms)": ("synchronization_time", "synchronization_ns"),
    "Idle Time(ms)": ("idle_time", "idle_ns"),
}
#: The transports of "Communication Bandwidth Info" (CommAnalyzerBandwidth.transport_type).
TRANSPORTS = ("RDMA", "HCCS", "PCIE", "SDMA", "SIO")
#: A matrix key `<collective type>-<statistic>@<group id>` (analysis.db: without `@<group id>`).
_MATRIX_KEY = re.compile(r"(?P<type>.+)-(?P<stat>top\d+|middle|bottom\d+|total)")
#: A matrix link `<src>-<dst>` in group-local ranks ("0.0"-style ranks, as msprof-analyze's cluster db writes them, are
#: accepted too).
_LINK = re.compile(r"(\d+)(?:\.0*)?-(\d+)(?:\.0*)?")
_RANK = re.compile(r"(\d+)(?:\.0*)?")
#: The entries of the JSON files that sum the others (left out: the models sum the ops themselves).
_TOTAL_KEY = "Total Op Info"
_MS, _US, _MB = 1_000_000, 1_000, 1_000_000


def read(source: Source, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """Yield ascend_step_summary, ascend_comm_op_summary, ascend_comm_link_summary and ascend_comm_group pieces of one
    rank's derived files, then its run_info row."""
    found = _read_db(source, warn)
    devices: set[int] = set()
    for name, role, text_reader in (("ascend_step_summary", "step_trace_csv", _csv_steps),
                                    ("ascend_comm_op_summary", "communication", _json_ops),
                                    ("ascend_comm_link_summary", "communication_matrix", _json_links)):
        table = found.get(name)
        if table is None and role in source.files:
            table = text_reader(source.files[role], source, warn)
        if table is not None:
            if name == "ascend_step_summary":
                devices = set(pc.unique(table.column("device_id").drop_null()).to_pylist())
            yield name, table
    groups = _groups(source, warn)
    if groups is not None:
        yield "ascend_comm_group", groups
    info = source.files.get("info")
    # the device the step trace names (S2's Device_id), where it names one; else discover's (the rank)
    device = replace(source, device_id=devices.pop()) if len(devices) == 1 else source
    yield "run_info", run_info(device, device_type="ascend", framework=_framework(source), layout="ascend_summary",
                               metadata_json=_text(info, warn) if info is not None else None, **epoch_clock())


def _read_db(source: Source, warn: Warn) -> dict[str, pa.Table]:
    """The tables analysis.db holds (none when the source has no analysis.db). A database SQLite cannot read is
    reported and the text files beside it are read instead; texts that are not UTF-8 are read with U+FFFD for the bad
    bytes, and reported."""
    path = source.files.get("analysis_db")
    if path is None:
        return {}
    undecodable: list[bytes] = []

    def decode(raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            undecodable.append(raw)
            return raw.decode("utf-8", "replace")

    found = {}
    try:
        with closing(open_sqlite(path)) as db:
            db.text_factory = decode
            tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "StepTraceTime" in tables:
                found["ascend_step_summary"] = _db_steps(db, source, warn)
            if "CommAnalyzerTime" in tables:
                found["ascend_comm_op_summary"] = _db_ops(db, tables, source, warn)
            if "CommAnalyzerMatrix" in tables:
                found["ascend_comm_link_summary"] = _db_links(db, source, warn)
    except (sqlite3.Error, UnicodeDecodeError) as exc:  # SQLite's own message may quote damaged schema bytes
        warn(f"{path}: not a readable SQLite database ({exc}); the text files beside it are read instead",
             check="malformed_record", action="source_skipped", path=path)
        return {}
    if undecodable:
        warn(f"{path}: {len(undecodable)} texts that are not UTF-8; read with U+FFFD in place of the bad bytes",
             check="bad_encoding", action="repaired", rows=len(undecodable), path=path,
             example=repr(undecodable[0][:60]))
    return found


def _framework(source: Source) -> str:
    """The framework that wrote the result folder (run_info.ascend_framework), by its profiler_info JSON and name."""
    info = source.files.get("info")
    try:
        profiler_info = json.loads(info.read_bytes()) if info is not None else None
    except (OSError, ValueError):
        profiler_info = None
    return ascend_framework(profiler_info, source.directory)


# --- exact numbers -----------------------------------------------------------------------------------------------

def scaled(texts: pa.Array, scale: int) -> pa.Array:
    """Decimal texts (null: absent) times `scale` as int64 by units.py's rule (exact; null where not a number)."""
    import polars as pl
    frame = pl.DataFrame({"v": pa.array(texts, pa.string())})
    return frame.select(scaled_decimal(pl.col("v"), scale)).to_arrow().column(0).combine_chunks()


def step_numbers(texts: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(step numbers, whether the text is no step): 50, "50", "step50" -> 50; null, "" or "step" (a capture without
    steps) -> null, a step; anything else -> null, no step."""
    import polars as pl
    frame = pl.DataFrame({"s": pa.array(texts, pa.string())}).select(pl.col("s").str.strip_chars())
    result = frame.select(
        pl.col("s").str.extract(r"(?i)^(?:step)?\s*(\d{1,18})$", 1).cast(pl.Int64).alias("step"),
        (pl.col("s").is_not_null() & ~pl.col("s").str.to_lowercase().is_in(["", "step"])).alias("named"))
    steps = result.get_column("step").to_arrow()
    return steps, pc.and_(pc.is_null(steps), result.get_column("named").to_arrow())


def numbers_table(keys: dict[str, pa.Array], texts: dict[str, tuple[pa.Array, int]], step: pa.Array | None,
                  required: tuple[str, ...], what: str, path: Path, warn: Warn) -> pa.Table:
    """The table of `keys` (typed columns), `step` (step texts, see step_numbers) and `texts` (name -> (decimal texts,
    scale)) as exact int64. A row is left out, and reported once per kind (what, path), when a text is present but no
    number, when a `required` text or key is absent, or when its step is no step."""
    columns = dict(keys)
    bad_number = pa.array([False] * len(next(iter(texts.values()))[0]), pa.bool_())
    example = None
    for name in required:
        if name in keys and keys[name].null_count:
            bad_number = pc.or_(bad_number, pc.is_null(keys[name]))
            example = example or f"{name}: None"
    for name, (values, scale) in texts.items():
        columns[name] = number = scaled(values, scale)
        lost = pc.is_null(number) if name in required else pc.and_(pc.is_null(number), pc.is_valid(values))
        if example is None and pc.any(lost).as_py():
            example = f"{name}: {values[pc.index(lost, True).as_py()].as_py()!r}"
        bad_number = pc.or_(bad_number, lost)
    bad = bad_number
    if step is not None:
        columns["step"], bad_step = step_numbers(step)
        _report(bad_step, f"{what} whose step is neither a number nor 'step<N>'", path, warn,
                lambda: repr(step[pc.index(bad_step, True).as_py()].as_py()))
        bad_number = pc.and_(bad_number, pc.invert(bad_step))  # each row left out is reported once
        bad = pc.or_(bad, bad_step)
    _report(bad_number, f"{what} with a value that is no number, or none where one is needed", path, warn,
            lambda: example)
    table = pa.table(columns)
    return table.filter(pc.invert(bad)) if pc.any(bad).as_py() else table


def _report(bad: pa.Array, what: str, path: Path, warn: Warn, example: Callable[[], str | None]) -> None:
    count = pc.sum(bad.cast(pa.int64())).as_py() or 0
    if count:
        warn(f"{path}: {count} {what}; left out", check="malformed_record", action="dropped", rows=count, path=path,
             example=example())


def _constant(value: object, rows: int, kind: pa.DataType) -> pa.Array:
    return pa.array([value] * rows, kind)


# --- step trace --------------------------------------------------------------------------------------------------

def _csv_steps(path: Path, source: Source, warn: Warn) -> pa.Table | None:
    """step_trace_time.csv: one row per (device, step) in µs; S2 puts Device_id first."""
    import polars as pl
    try:
        frame = pl.read_csv(path, infer_schema=False, truncate_ragged_lines=True, encoding="utf8-lossy")
        frame = frame.rename({c: c.strip() for c in frame.columns})
    except (pl.exceptions.PolarsError, OSError) as exc:
        warn(f"{path}: cannot be read as CSV ({exc}); its step trace is missing", check="malformed_record",
             action="source_skipped", path=path)
        return None
    if "Step" not in frame.columns or not set(STEP_PHASES) & set(frame.columns):
        warn(f"{path}: no Step column or no phase column; its step trace is missing", check="malformed_record",
             action="source_skipped", path=path, example=",".join(frame.columns[:4]))
        return None

    def column(name: str) -> pa.Array:  # one by one: a damaged header may name other columns with bytes Arrow refuses
        return (frame.get_column(name).to_arrow().cast(pa.string()) if name in frame.columns
                else pa.nulls(frame.height, pa.string()))

    return _step_table(source, "step_trace_time.csv", column("Step"), column("Device_id"),
                       {name: column(csv_name) for csv_name, (_, name) in STEP_PHASES.items()}, path, warn)


def _step_table(source: Source, origin: str, step: pa.Array, device: pa.Array, phases: dict[str, pa.Array],
                path: Path, warn: Warn) -> pa.Table:
    rows = len(step)
    keys = {"rank": _constant(source.rank, rows, pa.int32()), "origin": _constant(origin, rows, pa.string())}
    table = numbers_table(keys, {"device_id": (device, 1), **{name: (values, _US) for name, values in phases.items()}},
                          step, (), "step rows", path, warn)
    device_ids = table.column("device_id").cast(pa.int32())
    return table.set_column(table.column_names.index("device_id"), "device_id", device_ids)


def _db_steps(db: sqlite3.Connection, source: Source, warn: Warn) -> pa.Table:
    """analysis.db StepTraceTime (µs; S2 puts deviceId first)."""
    data = _db_texts(db, "StepTraceTime", ["step", "deviceId", *(c for c, _ in STEP_PHASES.values())])
    phases = {name: data[db_name] for db_name, name in STEP_PHASES.values()}
    return _step_table(source, "analysis.db", data["step"], data["deviceId"], phases, source.files["analysis_db"], warn)


# --- communication.json, CommAnalyzerTime and CommAnalyzerBandwidth ---------------------------------------------------

def _load_json(path: Path, warn: Warn) -> dict | None:
    """A JSON file with every number kept as its text (parse_float/parse_int): exact decimals."""
    try:
        document = json.loads(path.read_bytes(), parse_float=str, parse_int=str)
    except (OSError, ValueError, RecursionError) as exc:
        warn(f"{path}: not valid JSON ({exc}); what it holds is missing", check="malformed_record",
             action="source_skipped", path=path)
        return None
    if not isinstance(document, dict):
        warn(f"{path}: not a JSON object of steps; what it holds is missing", check="malformed_record",
             action="source_skipped", path=path)
        return None
    return document


def _entries(document: dict, path: Path, warn: Warn) -> list[tuple[str, str, str, dict]]:
    """(step key, p2p|collective, entry key, entry) of a communication*.json, its Total Op Info sums left out. Entries
    that are not JSON objects are reported and left out."""
    entries, broken = [], []
    for step, kinds in document.items():
        for kind, ops in (kinds.items() if isinstance(kinds, dict) else [(None, kinds)]):
            for key, entry in (ops.items() if isinstance(ops, dict) and kind is not None else [(None, ops)]):
                if key is not None and isinstance(entry, dict):
                    if not key.startswith(_TOTAL_KEY):
                        entries.append((step, kind, key, entry))
                else:
                    broken.append(f"{step}/{kind}/{key}")
    if broken:
        warn(f"{path}: {len(broken)} entries that are not objects of step -> p2p|collective -> op; left out",
             check="malformed_record", action="dropped", rows=len(broken), path=path, example=broken[0])
    return entries


def _number_text(value: object) -> str | None:
    """A JSON value read with numbers as text: the text, None when absent, else a text that is no number."""
    return value if isinstance(value, str) or value is None else f"<{type(value).__name__}>"


def _field(entries: list[dict], *keys: str) -> pa.Array:
    """The number texts at `keys` (nested) of each entry."""
    values = []
    for entry in entries:
        for key in keys[:-1]:
            entry = entry.get(key) if isinstance(entry, dict) else None
        values.append(_number_text(entry.get(keys[-1]) if isinstance(entry, dict) else None))
    return pa.array(values, pa.string())


def _split_group(keys: list[str]) -> tuple[pa.Array, pa.Array]:
    """(name, group id) of `<name>@<group id>` keys (no '@': no group)."""
    parts = [key.rsplit("@", 1) for key in keys]
    return (pa.array([p[0] for p in parts], pa.string()),
            pa.array([p[1] if len(p) == 2 else None for p in parts], pa.string()))


def _json_ops(path: Path, source: Source, warn: Warn) -> pa.Table | None:
    """communication.json: one entry per op and step, times in ms, start in µs, sizes in MB (10^6 bytes)."""
    document = _load_json(path, warn)
    if document is None:
        return None
    entries = _entries(document, path, warn)
    ops = [entry for *_, entry in entries]
    names, groups = _split_group([key for _, _, key, _ in entries])
    texts = {"start_ns": (_field(ops, "Communication Time Info", "Start Timestamp(us)"), _US),
             **{name: (_field(ops, "Communication Time Info", key), _MS) for key, (_, name) in COMM_TIMES.items()}}
    for transport in TRANSPORTS:
        lower = transport.lower()
        texts[f"{lower}_bytes"] = (_field(ops, "Communication Bandwidth Info", transport, "Transit Size(MB)"), _MB)
        texts[f"{lower}_time_ns"] = (_field(ops, "Communication Bandwidth Info", transport, "Transit Time(ms)"), _MS)
    return _op_table(source, "communication.json", names, groups, pa.array([k for _, k, _, _ in entries], pa.string()),
                     pa.array([s for s, *_ in entries], pa.string()), texts, path, warn)


def _op_table(source: Source, origin: str, names: pa.Array, groups: pa.Array, kinds: pa.Array, steps: pa.Array,
              texts: dict[str, tuple[pa.Array, int]], path: Path, warn: Warn) -> pa.Table:
    rows = len(names)
    keys = {"rank": _constant(source.rank, rows, pa.int32()), "origin": _constant(origin, rows, pa.string()),
            "comm_kind": kinds, "op_name": names, "group_id": groups}
    return numbers_table(keys, texts, steps, ("op_name", "elapse_ns"), "communication ops", path, warn)


def _db_ops(db: sqlite3.Connection, tables: set[str], source: Source, warn: Warn) -> pa.Table:
    """CommAnalyzerTime, with each op's transit size and time per transport from CommAnalyzerBandwidth (a row per
    packet-size bucket that repeats them; a transport without rows moved nothing: 0). MindSpore's copy has no step
    and no type."""
    time_columns = [c for c, _ in COMM_TIMES.values()]
    data = _db_texts(db, "CommAnalyzerTime", ["hccl_op_name", "group_name", "step", "type", "start_timestamp",
                                              *time_columns])
    texts = {"start_ns": (data["start_timestamp"], _US),
             **{name: (data[column], _MS) for column, name in COMM_TIMES.values()}}
    if "CommAnalyzerBandwidth" in tables:
        bandwidth = _db_bandwidth(db, data)
        for transport in TRANSPORTS:
            lower = transport.lower()
            texts[f"{lower}_bytes"] = (bandwidth[(transport, "transit_size")], _MB)
            texts[f"{lower}_time_ns"] = (bandwidth[(transport, "transit_time")], _MS)
    path = source.files["analysis_db"]
    return _op_table(source, "analysis.db", data["hccl_op_name"], data["group_name"], data["type"], data["step"], texts,
                     path, warn)


def _db_bandwidth(db: sqlite3.Connection, ops: dict[str, pa.Array]) -> dict[tuple[str, str], pa.Array]:
    """(transport, transit_size|transit_time) -> its text for each CommAnalyzerTime row of `ops` ("0" where the op has
    no row of that transport)."""
    data = _db_texts(db, "CommAnalyzerBandwidth", ["hccl_op_name", "group_name", "step", "type", "transport_type",
                                                   "transit_size", "transit_time"])
    keys = ["hccl_op_name", "group_name", "step", "type"]
    op_rows = pa.table({**{k: ops[k] for k in keys}, "_row": pa.array(range(len(ops["hccl_op_name"])), pa.int64())})
    bandwidth = pa.table(data)
    pivot = ", ".join(f"coalesce(any_value(b.{m}) FILTER (WHERE b.transport_type = '{t}'), '0') AS \"{t}:{m}\""
                      for t in TRANSPORTS for m in ("transit_size", "transit_time"))
    with memory_database() as con:
        con.register("op_rows", op_rows)
        con.register("bandwidth", bandwidth)
        joined = con.sql(f"SELECT o._row, {pivot} FROM op_rows o LEFT JOIN bandwidth b ON "
                         + " AND ".join(f"o.{k} IS NOT DISTINCT FROM b.{k}" for k in keys)
                         + " GROUP BY o._row ORDER BY o._row").to_arrow_table()
    return {(t, m): joined.column(f"{t}:{m}").combine_chunks()
            for t in TRANSPORTS for m in ("transit_size", "transit_time")}


# --- communication_matrix.json and CommAnalyzerMatrix -------------------------------------------------------------

def _json_links(path: Path, source: Source, warn: Warn) -> pa.Table | None:
    """communication_matrix.json: per matrix key `<type>-<stat>@<group>` and link `<src>-<dst>` (group-local ranks)."""
    document = _load_json(path, warn)
    if document is None:
        return None
    links = [(step, kind, key, link, entry) for step, kind, key, matrix in _entries(document, path, warn)
             for link, entry in matrix.items()]
    entries = [entry if isinstance(entry, dict) else {} for *_, entry in links]
    keys, groups = _split_group([key for _, _, key, _, _ in links])
    return _link_table(source, "communication_matrix.json", keys, groups,
                       pa.array([kind for _, kind, *_ in links], pa.string()),
                       pa.array([step for step, *_ in links], pa.string()),
                       pa.array([link for *_, link, _ in links], pa.string()), None, None,
                       pa.array([e.get("Transport Type") if isinstance(e.get("Transport Type"), str) else None
                                 for e in entries], pa.string()),
                       _field(entries, "Transit Size(MB)"), _field(entries, "Transit Time(ms)"),
                       pa.array([e.get("Op Name") if isinstance(e.get("Op Name"), str) else None for e in entries],
                                pa.string()), path, warn)


def _db_links(db: sqlite3.Connection, source: Source, warn: Warn) -> pa.Table:
    data = _db_texts(db, "CommAnalyzerMatrix", ["hccl_op_name", "group_name", "src_rank", "dst_rank", "transport_type",
                                                "transit_size", "transit_time", "step", "type", "op_name"])
    return _link_table(source, "analysis.db", data["hccl_op_name"], data["group_name"], data["type"], data["step"],
                       None, data["src_rank"], data["dst_rank"], data["transport_type"], data["transit_size"],
                       data["transit_time"], data["op_name"], source.files["analysis_db"], warn)


def _link_table(source: Source, origin: str, keys: pa.Array, groups: pa.Array, kinds: pa.Array, steps: pa.Array,
                links: pa.Array | None, src: pa.Array | None, dst: pa.Array | None, transports: pa.Array,
                sizes: pa.Array, times: pa.Array, op_names: pa.Array, path: Path, warn: Warn) -> pa.Table:
    """The ascend_comm_link_summary rows: the key split into collective type and statistic, the link into group-local
    src and dst ranks ("0-1", or analysis.db's "0.0" ranks), sizes MB -> bytes, times ms -> ns."""
    import polars as pl
    rows = len(keys)
    if links is not None:
        link = pl.col("l").str.extract
        split = pl.DataFrame({"l": links}).select(link(_LINK.pattern, 1).alias("src"), link(_LINK.pattern, 2).alias("dst"))
        src, dst = (split.get_column(c).to_arrow() for c in ("src", "dst"))
        bad_links = pc.or_(pc.is_null(src), pc.is_null(dst))
        src = pc.if_else(bad_links, "<no link>", src)  # left out below, as numbers that are no numbers
    else:
        src, dst = (pl.DataFrame({"r": r}).select(pl.col("r").str.extract(f"^{_RANK.pattern}$", 1)).to_series()
                    .to_arrow() if r is not None else pa.nulls(rows, pa.string()) for r in (src, dst))
        src, dst = (pc.if_else(pc.is_null(r), "<no rank>", r) for r in (src, dst))
    parts = pl.DataFrame({"k": keys}).select(pl.col("k").str.extract(f"^{_MATRIX_KEY.pattern}$", 1).alias("type"),
                                             pl.col("k").str.extract(f"^{_MATRIX_KEY.pattern}$", 2).alias("stat"))
    collective, stat = (parts.get_column(c).to_arrow() for c in ("type", "stat"))
    key_columns = {"rank": _constant(source.rank, rows, pa.int32()), "origin": _constant(origin, rows, pa.string()),
                   "comm_kind": kinds, "matrix_key": keys, "collective_type": collective, "stat": stat,
                   "group_id": groups, "transport": transports, "op_name": op_names}
    table = numbers_table(key_columns, {"src_rank": (src, 1), "dst_rank": (dst, 1), "bytes": (sizes, _MB),
                                        "time_ns": (times, _MS)},
                          steps, ("src_rank", "dst_rank", "bytes", "time_ns"), "matrix links", path, warn)
    unnamed = pc.or_(pc.is_null(table.column("collective_type")), pc.is_null(table.column("transport")))
    _report(unnamed, "matrix links whose key is not '<type>-<top1|middle|bottomN|total>' or that name no Transport "
                     "Type", path, warn, lambda: table.column("matrix_key")[pc.index(unnamed, True).as_py()].as_py())
    return table.filter(pc.invert(unnamed))


# --- parallel_group_info: group-local ranks to global ranks -----------------------------------------------------

def double_hash(name: str) -> int:
    """msprof-analyze's group id of a group name (common_func/utils.py): two 32-bit rolling hashes (x29, x131) of the
    characters, as hi << 32 | lo."""
    low = high = 0
    for character in name:
        high = (high * 29 + ord(character)) & 0xFFFFFFFF
        low = (low * 131 + ord(character)) & 0xFFFFFFFF
    return high << 32 | low


def _groups(source: Source, warn: Warn) -> pa.Table | None:
    """profiler_metadata.json parallel_group_info: {<key>: {group_name, group_rank, global_ranks}} -> one row per
    member: the group id (double_hash of the key, as communication*.json write it), local rank = position in the
    sorted global_ranks (msprof-analyze's rule), global rank."""
    path = source.user_metadata
    if path is None:
        return None
    try:
        info = json.loads(path.read_bytes()).get("parallel_group_info")
    except (OSError, ValueError, AttributeError):
        return None  # run.py reads the metadata file for run_info and reports what is wrong with it
    if not isinstance(info, dict):
        return None
    rows = []
    for key, group in info.items():
        members = group.get("global_ranks") if isinstance(group, dict) else None
        if not (isinstance(members, list) and all(isinstance(m, int) and not isinstance(m, bool) and 0 <= m < 2**31
                                                   for m in members)):
            warn(f"{path}: parallel_group_info {key!r} has no list of global ranks; its local ranks stay unmapped",
                 check="malformed_record", action="dropped", path=path, example=repr(group)[:120])
            continue
        label = group.get("group_name") if isinstance(group.get("group_name"), str) else None
        rows += [(str(double_hash(key)), key, label, local, member)
                 for local, member in enumerate(sorted(set(members)))]
    columns = list(zip(*rows)) if rows else [[]] * 5
    return pa.table({"rank": _constant(source.rank, len(rows), pa.int32()),
                     "group_id": pa.array(columns[0], pa.string()), "group_key": pa.array(columns[1], pa.string()),
                     "group_label": pa.array(columns[2], pa.string()),
                     "local_rank": pa.array(columns[3], pa.int64()), "global_rank": pa.array(columns[4], pa.int64())})


# --- SQLite --------------------------------------------------------------------------------------------------------

def _db_texts(db: sqlite3.Connection, table: str, names: list[str]) -> dict[str, pa.Array]:
    """Each of `names` of `table` as text (null where the column is absent or the value NULL): TEXT and INTEGER values
    as SQLite writes them, REAL values as their shortest round-trip decimal (Arrow's cast), never through a rounded
    printf."""
    present = {row[1] for row in db.execute(f'PRAGMA table_info("{table}")')}
    selected = [n for n in names if n in present]
    parts = ", ".join(f"CASE typeof(\"{n}\") WHEN 'real' THEN \"{n}\" END, "
                      f"CASE WHEN typeof(\"{n}\") IN ('integer', 'text') THEN CAST(\"{n}\" AS TEXT) END"
                      for n in selected)
    rows = db.execute(f'SELECT {parts} FROM "{table}"').fetchall() if selected else []
    columns = list(zip(*rows)) if rows else [()] * (2 * len(selected))
    result = {}
    for i, name in enumerate(selected):
        reals = pc.cast(pa.array(columns[2 * i], pa.float64()), pa.string())
        result[name] = pc.coalesce(pa.array(columns[2 * i + 1], pa.string()), reals)
    rows_n = len(rows)
    return {name: result.get(name, pa.nulls(rows_n, pa.string())) for name in names}


def _text(path: Path, warn: Warn) -> str | None:
    """The profiler_info JSON object, verbatim (run_info.metadata_json); None, reported, when it is none."""
    try:
        text = path.read_text(encoding="utf-8")
        if isinstance(json.loads(text), dict):
            return text
        problem = "not a JSON object"
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        problem = f"cannot be read ({exc})"
    warn(f"{path}: {problem}; run_info has no profiler_info (the rank comes from the file name)",
         check="malformed_record", action="kept", path=path)
    return None
