"""Stage 2, ingest: MindSpore 1.2-2.3's Ascend memory usage file `memory_usage_<r>.pb` -> memory_graph, memory_node,
memory_tensor, memory_node_tensor (called by mindspore_memory.py for the source's `ms_usage` file).

The file is one protobuf message (shared/reference/formats-mindspore-extras.md §2.1; MindSpore's
memory_profiling.proto, the same field numbers from 1.2, where the integers were int64, to 2.3, uint64):

    MemoryProto   { repeated GraphMemProto graph_mem = 1; uint64 total_mem = 2; }
    GraphMemProto { int64 graph_id = 1; int64 static_mem = 2; repeated NodeMemProto node_mems = 3;
                    repeated TensorMemProto tensor_mems = 4; string fp_start = 5; string bp_end = 6; }
    NodeMemProto  { string node_name = 1; uint64 node_id = 2; repeated uint64 input_tensor_id = 3;
                    repeated uint64 output_tensor_id = 4; repeated uint64 workspace_tensor_id = 5; }
    TensorMemProto{ uint64 tensor_id = 1; uint64 size = 2; string type = 3; uint64 life_start = 4;
                    uint64 life_end = 5; string life_long = 6; }

It holds, per graph that MindSpore's memory planner (SOMAS) laid out, the static memory, the nodes in execution
order and every tensor with its aligned size and its lifetime as node indices; no times. The position of a node in
node_mems is the x axis of MindSpore's memory curve (its `node_id` is kept too). A tensor's lifetime is located by
MindSpore's rules (its profiler/parser/memory_usage_parser.py; N = the graph's nodes): LifeLongGraphAll: nodes
0..N-1; LifeLongGraphStart: 0..life_end; LifeLongGraphEnd: life_start..N-1; LifeLongNone: life_start..life_end. A
lifetime MindSpore cannot locate (an end before the start, a start beyond the graph, another kind) is kept in
memory_tensor without first_node / last_node and left out of the curve, as MindSpore leaves it out (reported,
action excluded); one that runs beyond the graph's last node, where MindSpore's parser fails, is also left out
(reported, kept).

Damage costs the smallest unit that holds it: a graph whose bytes break the wire format (a bad varint, a length
beyond its message, a wrong wire type for a known field) is dropped whole, as its node indices cannot be trusted
past the damage; damage between graphs ends the read there (the graphs before it are kept). Values: a tensor whose
size is negative or would take the file's sizes beyond 2^62 bytes, a graph with such a static size, and the earlier
copies of a repeated tensor id (MindSpore keeps the last) are dropped; a node's reference to a tensor id the graph
does not hold is dropped; a node id beyond int64 is null; a name that is not UTF-8 is repaired (U+FFFD). Each kind
is one trace_health row with its count and the byte offset of its first case.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from ..errors import InputError
from ..health import Warn
from .lines import MAX_PROTOBUF_BYTES, read_capped
from .protowire import LEN, VARINT, Field, WireError, expect, fields, repeated_varints, signed

#: A file's sizes (static memory and tensors, all graphs) add up to at most this, so any sum of them is an int64.
MAX_BYTES = 1 << 62
_ROLES = {3: "input", 4: "output", 5: "workspace"}
#: The tables of a memory usage file (trace_health names them where a problem costs rows of all of them).
TABLES = "memory_graph,memory_node,memory_tensor,memory_node_tensor"


@dataclass
class _Tensor:
    offset: int
    tensor_id: int = 0
    size: int = 0
    type: str | None = None
    life_start: int = 0
    life_end: int = 0
    life_long: str = ""


@dataclass
class _Node:
    offset: int
    name: str = ""
    node_id: int = 0
    refs: dict[str, list[int]] = field(default_factory=lambda: {r: [] for r in _ROLES.values()})


@dataclass
class _Graph:
    offset: int
    graph_id: int = 0
    static: int = 0
    nodes: list[_Node] = field(default_factory=list)
    tensors: list[_Tensor] = field(default_factory=list)
    fp_start: str | None = None
    bp_end: str | None = None


class _Ledger:
    """The file's problems by kind: one trace_health row each, with its count and its first byte offset."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.kinds: dict[tuple[str, str, str, str], list] = {}

    def add(self, offset: int, what: str, check: str, action: str, tables: str, example: str = "") -> None:
        entry = self.kinds.setdefault((what, check, action, tables), [0, offset, example])
        entry[0] += 1

    def report(self, warn: Warn) -> None:
        for (what, check, action, tables), (count, offset, example) in self.kinds.items():
            warn(f"{self.path}, byte offset {offset}: {count} {what}", check=check, action=action, rows=count,
                 path=self.path, offset=offset, example=example or None, tables=tables)


def read(path: Path, warn: Warn) -> list[tuple[str, pa.Table]]:
    """The memory_graph, memory_node, memory_tensor and memory_node_tensor rows of one memory_usage file."""
    try:
        data = read_capped(path, MAX_PROTOBUF_BYTES, "a memory usage protobuf")
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from exc
    ledger = _Ledger(path)
    graphs, capacity = _message(data, ledger)
    rows = _Rows(capacity)
    budget = MAX_BYTES
    seen: set[int] = set()
    for graph in graphs:
        if graph.graph_id in seen:
            ledger.add(graph.offset, "graphs whose graph_id an earlier graph has; left out", "duplicate_record",
                       "dropped", TABLES, str(graph.graph_id))
            continue
        if not 0 <= graph.static <= budget:
            ledger.add(graph.offset, "graphs whose static memory is negative or takes the file's sizes beyond 2^62 "
                       "bytes; left out", "out_of_range", "dropped", TABLES, str(graph.static))
            continue
        seen.add(graph.graph_id)
        budget = rows.add(graph, budget - graph.static, ledger)
    ledger.report(warn)
    return list(rows.tables())


def _message(data: bytes, ledger: _Ledger) -> tuple[list[_Graph], int | None]:
    """The graphs and total_mem of the file; damage between graphs ends the read there."""
    graphs, capacity = [], None
    try:
        for top in fields(data, 0, len(data)):
            if top.number == 1 and top.wire_type == LEN:
                try:
                    graphs.append(_graph(data, top, ledger))
                except WireError as exc:
                    ledger.add(exc.offset, f"graphs that break the wire format ({exc.args[0]}); left out whole",
                               exc.check, "dropped", TABLES)
            elif top.number == 2 and top.wire_type == VARINT:
                capacity = signed(top.value)
                if not 0 <= capacity <= MAX_BYTES:
                    ledger.add(top.offset, "total_mem values that are negative or beyond 2^62 bytes; capacity left "
                               "null", "out_of_range", "dropped", "memory_graph", str(capacity))
                    capacity = None
            else:
                _unknown(top, ledger, "MemoryProto")
    except WireError as exc:
        ledger.add(exc.offset, f"places where the file stops being a memory profile ({exc.args[0]}); the rest of "
                   "the file is left out", exc.check, "dropped", TABLES)
    return graphs, capacity


def _unknown(item: Field, ledger: _Ledger, message: str) -> None:
    ledger.add(item.offset, f"fields that {message} does not define (number, wire type); left out", "unknown_tag",
               "dropped", TABLES, f"{item.number}, {item.wire_type}")


def _text(data: bytes, item: Field, ledger: _Ledger, what: str) -> str:
    raw = data[expect(item, LEN).start:item.end]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
        ledger.add(item.offset, f"{what} that are not UTF-8; bad bytes read as U+FFFD", "bad_encoding", "repaired",
                   TABLES, text)
        return text


def _graph(data: bytes, item: Field, ledger: _Ledger) -> _Graph:
    graph = _Graph(item.offset)
    for part in fields(data, item.start, item.end):
        if part.number == 1:
            graph.graph_id = signed(expect(part, VARINT).value)
        elif part.number == 2:
            graph.static = signed(expect(part, VARINT).value)
        elif part.number == 3:
            graph.nodes.append(_node(data, expect(part, LEN), ledger))
        elif part.number == 4:
            graph.tensors.append(_tensor(data, expect(part, LEN), ledger))
        elif part.number in (5, 6):
            text = _text(data, part, ledger, "point names") or None
            graph.fp_start, graph.bp_end = (text, graph.bp_end) if part.number == 5 else (graph.fp_start, text)
        else:
            _unknown(part, ledger, "GraphMemProto")
    return graph


def _node(data: bytes, item: Field, ledger: _Ledger) -> _Node:
    node = _Node(item.offset)
    for part in fields(data, item.start, item.end):
        if part.number == 1:
            node.name = _text(data, part, ledger, "node names")
        elif part.number == 2:
            node.node_id = signed(expect(part, VARINT).value)
        elif part.number in _ROLES:
            node.refs[_ROLES[part.number]] += [signed(v) for v in repeated_varints(data, part)]
        else:
            _unknown(part, ledger, "NodeMemProto")
    return node


def _tensor(data: bytes, item: Field, ledger: _Ledger) -> _Tensor:
    tensor = _Tensor(item.offset)
    for part in fields(data, item.start, item.end):
        if part.number in (1, 2, 4, 5):
            value = signed(expect(part, VARINT).value)
            name = {1: "tensor_id", 2: "size", 4: "life_start", 5: "life_end"}[part.number]
            setattr(tensor, name, value)
        elif part.number == 3:
            tensor.type = _text(data, part, ledger, "tensor types") or None
        elif part.number == 6:
            tensor.life_long = _text(data, part, ledger, "lifetime kinds")
        else:
            _unknown(part, ledger, "TensorMemProto")
    return tensor


def locate(life_long: str, start: int, end: int, nodes: int) -> tuple[int, int] | str | None:
    """The first and last node index of a tensor's lifetime by MindSpore's rules; None when it is on no node
    (LifeLongGraphEnd from node N, an empty graph); else why it cannot be located: 'unlocatable' (MindSpore
    leaves it out), 'beyond' (past the graph's last node, where MindSpore's parser fails) or 'kind'."""
    if life_long == "LifeLongGraphAll":
        return (0, nodes - 1) if nodes else None
    if life_long == "LifeLongGraphStart":
        return "unlocatable" if end < 0 else "beyond" if end >= nodes else (0, end)
    if life_long == "LifeLongGraphEnd":
        return "unlocatable" if not 0 <= start <= nodes else (start, nodes - 1) if start < nodes else None
    if life_long == "LifeLongNone":
        return "unlocatable" if not 0 <= start <= end else "beyond" if end >= nodes else (start, end)
    return "kind"


_LIFE_PROBLEMS = {
    "kind": ("tensors whose life_long is none of MindSpore's four kinds; kept without a lifetime, left out of the "
             "curve as MindSpore leaves them out", "unknown_tag", "excluded"),
    "unlocatable": ("tensors whose lifetime MindSpore cannot locate (negative, or ending before it starts); kept "
                    "without a lifetime, left out of the curve as MindSpore leaves them out", "negative_duration",
                    "excluded"),
    "beyond": ("tensors whose lifetime runs past the graph's last node (MindSpore's parser fails on them); kept "
               "without a lifetime, left out of the curve", "out_of_range", "kept"),
}


class _Rows:
    """The rows of the four tables, graph by graph."""

    def __init__(self, capacity: int | None) -> None:
        self.capacity = capacity
        self.graph: dict[str, list] = {c: [] for c in ("graph_id", "static_bytes", "fp_start", "bp_end",
                                                       "capacity_bytes")}
        self.node: dict[str, list] = {c: [] for c in ("graph_id", "node_index", "node_id", "node_name")}
        self.tensor: dict[str, list] = {c: [] for c in ("graph_id", "tensor_id", "bytes", "tensor_type", "life_long",
                                                        "life_start", "life_end", "first_node", "last_node")}
        self.ref: dict[str, list] = {c: [] for c in ("graph_id", "node_index", "role", "tensor_id")}

    def add(self, graph: _Graph, budget: int, ledger: _Ledger) -> int:
        """Add `graph`'s rows; its tensors spend `budget` bytes; return what is left of it."""
        gid = graph.graph_id
        for column, value in (("graph_id", gid), ("static_bytes", graph.static), ("fp_start", graph.fp_start),
                              ("bp_end", graph.bp_end), ("capacity_bytes", self.capacity)):
            self.graph[column].append(value)
        last = {t.tensor_id: t for t in graph.tensors}  # MindSpore's dict: the last copy of an id wins
        kept: set[int] = set()
        for tensor in graph.tensors:
            if last[tensor.tensor_id] is not tensor:
                ledger.add(tensor.offset, "tensors whose tensor_id a later tensor of the graph has (MindSpore keeps "
                           "the last); left out", "duplicate_record", "dropped", "memory_tensor", str(tensor.tensor_id))
            elif tensor.tensor_id < 0 or not 0 <= tensor.size <= budget:
                ledger.add(tensor.offset, "tensors with a negative id or size, or a size that takes the file's sizes "
                           "beyond 2^62 bytes; left out", "out_of_range", "dropped", "memory_tensor",
                           f"{tensor.tensor_id}: {tensor.size}")
            else:
                budget -= tensor.size
                kept.add(tensor.tensor_id)
                self._tensor(gid, tensor, len(graph.nodes), ledger)
        for index, node in enumerate(graph.nodes):
            self._node(gid, index, node, kept, ledger)
        return budget

    def _tensor(self, gid: int, tensor: _Tensor, nodes: int, ledger: _Ledger) -> None:
        life = locate(tensor.life_long, tensor.life_start, tensor.life_end, nodes)
        if isinstance(life, str):
            what, check, action = _LIFE_PROBLEMS[life]
            ledger.add(tensor.offset, what, check, action, "memory_tensor",
                       f"{tensor.life_long} {tensor.life_start}..{tensor.life_end} of {nodes} nodes")
        first, last = life if isinstance(life, tuple) else (None, None)
        for column, value in (("graph_id", gid), ("tensor_id", tensor.tensor_id), ("bytes", tensor.size),
                              ("tensor_type", tensor.type), ("life_long", tensor.life_long),
                              ("life_start", tensor.life_start), ("life_end", tensor.life_end),
                              ("first_node", first), ("last_node", last)):
            self.tensor[column].append(value)

    def _node(self, gid: int, index: int, node: _Node, kept: set[int], ledger: _Ledger) -> None:
        if node.node_id < 0:
            ledger.add(node.offset, "node ids beyond int64; left null", "out_of_range", "dropped", "memory_node",
                       str(node.node_id))
        for column, value in (("graph_id", gid), ("node_index", index),
                              ("node_id", node.node_id if node.node_id >= 0 else None), ("node_name", node.name)):
            self.node[column].append(value)
        for role, ids in node.refs.items():
            listed: set[int] = set()
            for tensor_id in ids:
                if tensor_id not in kept:
                    ledger.add(node.offset, "references of nodes to tensor ids the graph does not hold; left out",
                               "unlinked", "dropped", "memory_node_tensor", f"{node.name} {role} {tensor_id}")
                elif tensor_id in listed:
                    ledger.add(node.offset, "references a node lists twice under one role; the copy left out",
                               "duplicate_record", "dropped", "memory_node_tensor", f"{node.name} {role} {tensor_id}")
                else:
                    listed.add(tensor_id)
                    for column, value in (("graph_id", gid), ("node_index", index), ("role", role),
                                          ("tensor_id", tensor_id)):
                        self.ref[column].append(value)

    def tables(self) -> Iterator[tuple[str, pa.Table]]:
        for name, columns in (("memory_graph", self.graph), ("memory_node", self.node),
                              ("memory_tensor", self.tensor), ("memory_node_tensor", self.ref)):
            rows = len(columns["graph_id"])
            if rows:
                yield name, pa.table({"seq": pa.array(range(rows), pa.int64()), **columns})
