"""MindSpore 1.x memory_usage_<r>.pb (profpipe/ingest/memory_usage_pb.py, protowire.py) and its marts, against the
generator's ground truth (fixtures/ascend_memory_pb/expected.json) and MindSpore's algorithm written out here
(memory_usage_parser.py of MindSpore 1.2-2.3: curve, node sizes, the N // 2000 thinning, the summary). Damage tests:
hypothesis cuts, flips and rewrites the file, and checks the rows kept and the ledger's counts and offsets."""
from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import example, given, strategies as st

from conftest import FIXTURES, assert_generator_reproduces, query, run
from profpipe.captures import SourceSpan, number_captures
from fuzzing import FUZZ, byte_flips, read_damaged

PB = FIXTURES / "ascend_memory_pb"
FILE = "profiler/memory_usage_0.pb"
TRUTH = json.loads((PB / "expected.json").read_text())
_spec = importlib.util.spec_from_file_location("pb_generator", FIXTURES / "generators" / "ascend_memory_pb.py")
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)
KINDS = ("LifeLongGraphAll", "LifeLongGraphStart", "LifeLongGraphEnd", "LifeLongNone")


# --- MindSpore's algorithm (memory_usage_parser.py), on the ground truth, in bytes ----------------------------

def live_range(tensor: dict, nodes: int) -> range:
    """The node indices at which MindSpore counts the tensor (empty where it cannot locate it)."""
    kind, start, end = tensor["life_long"], tensor["life_start"], tensor["life_end"]
    if kind == "LifeLongGraphAll":
        return range(0, nodes)
    if kind == "LifeLongGraphStart":
        return range(0, end + 1) if end >= 0 else range(0)
    if kind == "LifeLongGraphEnd":
        return range(start, nodes) if 0 <= start <= nodes else range(0)
    if kind == "LifeLongNone":
        return range(start, end + 1) if 0 <= start <= end else range(0)
    return range(0)


def curve(graph: dict) -> list[int]:
    """MindSpore's memory line of a graph before thinning: static memory plus the live tensors, per node."""
    tensors = {t["tensor_id"]: t for t in graph["tensors"]}  # the last copy of an id wins
    lines = [graph["static_mem"]] * len(graph["nodes"])
    for tensor in tensors.values():
        for index in live_range(tensor, len(graph["nodes"])):
            lines[index] += tensor["size"]
    return lines


def thinned(lines: list[int]) -> list[int]:
    return lines[::len(lines) // 2000] if len(lines) > 2000 else lines


def node_rows(graph: dict) -> list[tuple]:
    """Per node: name, node_id, MindSpore's allocations and size (distinct output + workspace tensors), allocated
    (the change of the line), the line."""
    sizes = {t["tensor_id"]: t["size"] for t in graph["tensors"]}
    lines = curve(graph)
    rows = []
    for index, node in enumerate(graph["nodes"]):
        ids = set(node["outputs"] + node["workspace"])
        before = lines[index - 1] if index else graph["static_mem"]
        rows.append((node["name"], node["node_id"], len(ids), sum(sizes[i] for i in ids), lines[index] - before,
                     lines[index]))
    return rows


def summary(truth: dict) -> dict:
    counted = [g for g in truth["graphs"] if g["tensors"]]  # MindSpore skips graphs without tensors
    return {"capacity": truth["total_mem"], "peak_mem": max([max(curve(g)) for g in counted], default=0),
            "static_mem": sum(g["static_mem"] for g in counted),
            "allocations": sum(len({t["tensor_id"] for t in g["tensors"]}) for g in counted)}


# --- the fixture --------------------------------------------------------------------------------------------

def test_the_generator_reproduces_the_fixture(tmp_path):
    assert_generator_reproduces("ascend_memory_pb.py", PB, tmp_path)


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("memory_pb") / "out"
    run(PB, folder)
    return folder


def _rows(table, rank: int, *columns: str) -> list[tuple]:
    data = table.to_pydict()
    return [tuple(data[c][i] for c in columns) for i in range(table.num_rows) if data["rank"][i] == rank]


def test_the_tables_hold_the_files_as_written():
    outcome = read_damaged(PB)
    for rank, truth in TRUTH.items():
        graphs = truth["graphs"]
        assert _rows(outcome.tables["memory_graph"], int(rank), "graph_id", "static_bytes", "capacity_bytes",
                     "fp_start") == [(g["graph_id"], g["static_mem"], truth["total_mem"], None) for g in graphs]
        assert _rows(outcome.tables["memory_node"], int(rank), "graph_id", "node_index", "node_id", "node_name") == [
            (g["graph_id"], i, n["node_id"], n["name"]) for g in graphs for i, n in enumerate(g["nodes"])]
        expected = []
        for g in graphs:
            for t in g["tensors"]:
                live = live_range(t, len(g["nodes"]))
                expected.append((g["graph_id"], t["tensor_id"], t["size"], t["type"], t["life_long"], t["life_start"],
                                 t["life_end"], live[0] if live else None, live[-1] if live else None))
        assert _rows(outcome.tables["memory_tensor"], int(rank), "graph_id", "tensor_id", "bytes", "tensor_type",
                     "life_long", "life_start", "life_end", "first_node", "last_node") == expected
        refs = [(g["graph_id"], i, role, tensor_id) for g in graphs for i, n in enumerate(g["nodes"])
                for role, key in (("input", "inputs"), ("output", "outputs"), ("workspace", "workspace"))
                for tensor_id in n[key]]
        assert sorted(_rows(outcome.tables["memory_node_tensor"], int(rank), "graph_id", "node_index", "role",
                            "tensor_id")) == sorted(refs)
    # the one tensor MindSpore cannot locate (LifeLongNone 7..4) is the only ledger row
    assert [(e.check, e.action, e.rows, e.tables) for e in outcome.health] == [
        ("negative_duration", "excluded", 1, "memory_tensor")]
    assert all(k in {t["life_long"] for g in TRUTH["0"]["graphs"] for t in g["tensors"]} for k in KINDS)


def test_the_node_curve_is_mindspores_and_keeps_its_thinned_lines(out):
    for rank, truth in TRUTH.items():
        for graph in truth["graphs"]:
            got = query(out, "SELECT node_name, node_id, allocated_tensors, allocated_bytes, change_bytes, bytes, "
                             f"in_mindspore_lines FROM memory_node_curve WHERE rank = {rank} AND graph_id = "
                             f"{graph['graph_id']} ORDER BY node_index")
            assert [r[:6] for r in got] == node_rows(graph)
            lines = [r[5] for r in got if r[6]]
            assert lines == (thinned(curve(graph)) if graph["tensors"] else [])
    # rank 1's graph of 4100 nodes: MindSpore keeps every 2nd point, 2050 of them
    assert query(out, "SELECT count(*) FROM memory_node_curve WHERE rank = 1 AND in_mindspore_lines") == [(2050,)]


def test_the_summary_and_the_graph_peaks_are_mindspores(out):
    for rank, truth in TRUTH.items():
        expected = summary(truth)
        got = query(out, f"SELECT capacity_bytes, peak_bytes, static_bytes, allocations, deallocations FROM "
                         f"memory_usage_summary WHERE rank = {rank}")
        assert got == [(expected["capacity"], expected["peak_mem"], expected["static_mem"], expected["allocations"],
                        expected["allocations"])]
        for graph in truth["graphs"]:
            lines = curve(graph)
            peak = max(lines)
            got = query(out, f"SELECT nodes, tensors, static_bytes, peak_bytes, peak_node_index, in_mindspore_summary "
                             f"FROM memory_graph_stats WHERE rank = {rank} AND graph_id = {graph['graph_id']}")
            assert got == [(len(lines), len(graph["tensors"]), graph["static_mem"], peak, lines.index(peak),
                            bool(graph["tensors"]))]
    # the worked numbers of rank 0 (MindSpore's own parser, v1.10.1, gave 0.2500128746032715 GiB and 13 tensors)
    assert query(out, "SELECT peak_bytes, static_bytes, allocations FROM memory_usage_summary WHERE rank = 0") == [
        (268_449_280, 268_435_968, 13)]


MINDSPORE = PB / "mindspore_1.10.1"  # MindSpore 1.10.1's own parser run on the fixture (its README)


@pytest.mark.parametrize("rank", ["0", "1"])
def test_the_reports_and_curve_equal_mindspore_1_10_1s_own_files(out, rank):
    assert (out / "reports" / f"memory_usage_summary_{rank}.json").read_bytes() == \
        (MINDSPORE / f"memory_usage_summary_{rank}.json").read_bytes()
    details = json.loads((MINDSPORE / f"memory_usage_details_{rank}.json").read_text())
    for graph_id, graph in details.items():
        got = query(out, "SELECT node_name, node_id, allocated_tensors, allocated_bytes / 2^30, change_bytes / 2^30, "
                         f"bytes / 2^30 FROM memory_node_curve WHERE rank = {rank} AND graph_id = {graph_id} "
                         "AND in_mindspore_lines ORDER BY node_index")
        assert [r[5] for r in got] == graph["lines"]  # exact: sums of 512-byte multiples / 2^30
        assert [r[:5] for r in got] == [(n["name"], n["node_id"], n["allocations"], n["size"], n["allocated"])
                                        for n in graph["nodes"]]
        stats = query(out, f"SELECT static_bytes / 2^30 FROM memory_graph_stats WHERE rank = {rank} "
                           f"AND graph_id = {graph_id}")
        assert stats == [(graph["static_mem"],)]
    # MindSpore writes no details for graphs without tensors (rank 0's graph 5)
    assert sorted(details) == sorted(str(g) for g, in query(out, "SELECT graph_id FROM memory_graph_stats WHERE "
                                                                 f"rank = {rank} AND in_mindspore_summary"))


# --- damage -------------------------------------------------------------------------------------------------

def _file(graph_payloads: list[bytes], total_mem: int = TRUTH["0"]["total_mem"], tail: bytes = b"") -> bytes:
    return b"".join(gen.len_field(1, p, keep_empty=True) for p in graph_payloads) + gen.int_field(2, total_mem) + tail


def _read(tmp_path: Path, data: bytes, other_rank: bool = False):
    """The damaged rank 0 file read as the runner reads it, beside rank 1's file where `other_rank`."""
    folder = tmp_path / "in"
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "profiler").mkdir(parents=True)
    if other_rank:
        shutil.copy(PB / "profiler" / "memory_usage_1.pb", folder / "profiler")
    (folder / FILE).write_bytes(data)
    return read_damaged(folder)


def _rank(outcome, table: str, rank: int = 0) -> int:
    if table not in outcome.tables:
        return 0
    return sum(1 for r in outcome.tables[table].column("rank").to_pylist() if r == rank)


def _ledger(outcome, check: str, action: str | None = None) -> list:
    return [e for e in outcome.health if e.check == check and (action is None or e.action == action)]


RANK1_NODES = len(TRUTH["1"]["graphs"][0]["nodes"])
GRAPHS = TRUTH["0"]["graphs"]
PAYLOADS = [gen.encode_graph(g) for g in GRAPHS]
DATA = _file(PAYLOADS)
#: where each graph record and the total_mem field start, and the file's end
BOUNDS = [sum(len(gen.len_field(1, p, keep_empty=True)) for p in PAYLOADS[:i]) for i in range(len(PAYLOADS) + 1)]


def test_the_fixture_is_the_encoding_the_damage_tests_start_from():
    assert (PB / FILE).read_bytes() == DATA


@FUZZ
@given(cut=st.integers(0, len(DATA) - 1))
@example(cut=BOUNDS[1]).via("a cut between graphs")
@example(cut=BOUNDS[1] + 1).via("a cut inside a graph's tag")
def test_a_cut_keeps_exactly_the_whole_graphs_before_it(cut: int, tmp_path: Path) -> None:
    outcome = _read(tmp_path, DATA[:cut], other_rank=True)
    assert _rank(outcome, "memory_node", 1) == RANK1_NODES  # one bad file never costs the others
    whole = sum(1 for end in BOUNDS[1:] if end <= cut)
    assert _rank(outcome, "memory_graph") == whole
    assert _rank(outcome, "memory_node") == sum(len(g["nodes"]) for g in GRAPHS[:whole])
    assert _rank(outcome, "memory_tensor") == sum(len(g["tensors"]) for g in GRAPHS[:whole])
    truncated = _ledger(outcome, "truncated", "dropped")
    if cut in BOUNDS:  # a message cut between fields is a shorter valid message: nothing to notice
        assert not truncated
    else:
        assert len(truncated) == 1 and truncated[0].offset == BOUNDS[whole]
        assert truncated[0].path.endswith("memory_usage_0.pb")
    # total_mem comes last: a cut file has no capacity
    assert set(outcome.tables["memory_graph"].column("capacity_bytes").to_pylist()) <= {None, TRUTH["1"]["total_mem"]}


def _check_invariants(outcome) -> None:
    """What every read must hold, whatever the damage: lifetimes located by MindSpore's rules against the graph's
    node count, unique graph and tensor ids, sizes that add up within 2^62, references to tensors that exist."""
    if "memory_graph" not in outcome.tables:
        return
    graphs = _rows(outcome.tables["memory_graph"], 0, "graph_id", "static_bytes")
    assert len({g for g, _ in graphs}) == len(graphs)
    nodes: dict[int, int] = {g: 0 for g, _ in graphs}
    for (graph_id,) in _rows(outcome.tables["memory_node"], 0, "graph_id") if "memory_node" in outcome.tables else []:
        nodes[graph_id] += 1
    tensors = _rows(outcome.tables["memory_tensor"], 0, "graph_id", "tensor_id", "bytes", "life_long", "life_start",
                    "life_end", "first_node", "last_node") if "memory_tensor" in outcome.tables else []
    assert len({(g, t) for g, t, *_ in tensors}) == len(tensors)
    assert sum(s for _, s in graphs) + sum(t[2] for t in tensors) <= 1 << 62
    for graph_id, _, size, kind, start, end, first, last in tensors:
        assert size >= 0
        live = live_range({"life_long": kind, "life_start": start, "life_end": end}, nodes[graph_id])
        if first is not None:
            assert (first, last) == (live[0], live[-1])
        else:  # not located: empty by MindSpore's rules, or past the graph (where MindSpore fails)
            assert not live or live[-1] >= nodes[graph_id]
    if "memory_node_tensor" in outcome.tables:
        known = {(g, t) for g, t, *_ in tensors}
        assert all((g, t) in known for g, t in _rows(outcome.tables["memory_node_tensor"], 0, "graph_id", "tensor_id"))


@FUZZ
@given(data=byte_flips(DATA))
def test_flipped_bytes_never_break_the_rules(data: bytes, tmp_path: Path) -> None:
    outcome = _read(tmp_path, data)
    _check_invariants(outcome)
    assert outcome.errors == []  # damage is contained below the file: the source is never lost


def _graph_with(index: int, change) -> list[bytes]:
    """The payloads with graph `index`'s ground truth changed by `change` (a copy)."""
    graphs = json.loads(json.dumps(GRAPHS))
    change(graphs[index])
    return [gen.encode_graph(g) for g in graphs]


def _refs(graph: dict, tensor_id: int) -> int:
    return sum(n[k].count(tensor_id) for n in graph["nodes"] for k in ("inputs", "outputs", "workspace"))


@FUZZ
@given(graph=st.sampled_from([0, 1]), pick=st.integers(0, 99),
       size=st.one_of(st.integers(-(1 << 63), -1), st.integers((1 << 62) + 1, (1 << 63) - 1)))
def test_a_negative_or_huge_size_drops_exactly_its_tensor_and_its_references(graph: int, pick: int, size: int,
                                                                              tmp_path: Path) -> None:
    tensor = GRAPHS[graph]["tensors"][pick % len(GRAPHS[graph]["tensors"])]

    def change(g: dict) -> None:
        next(t for t in g["tensors"] if t["tensor_id"] == tensor["tensor_id"])["size"] = size

    outcome = _read(tmp_path, _file(_graph_with(graph, change)))
    assert _rank(outcome, "memory_tensor") == sum(len(g["tensors"]) for g in GRAPHS) - 1
    assert (GRAPHS[graph]["graph_id"], tensor["tensor_id"]) not in _rows(outcome.tables["memory_tensor"], 0, "graph_id",
                                                                         "tensor_id")
    [dropped] = _ledger(outcome, "out_of_range", "dropped")
    assert dropped.rows == 1 and BOUNDS[graph] < dropped.offset < BOUNDS[graph + 1]
    assert DATA[dropped.offset] == 0x22  # the tensor's record: field 4, wire type 2
    unlinked = _ledger(outcome, "unlinked", "dropped")
    assert sum(e.rows for e in unlinked) == _refs(GRAPHS[graph], tensor["tensor_id"])
    assert _rank(outcome, "memory_node_tensor") == sum(_refs(g, t["tensor_id"]) for g in GRAPHS for t in g["tensors"]) \
        - _refs(GRAPHS[graph], tensor["tensor_id"])
    _check_invariants(outcome)


@FUZZ
@given(node=st.integers(0, 9), role=st.sampled_from(["inputs", "outputs", "workspace"]),
       missing=st.one_of(st.integers(100, (1 << 63) - 1), st.integers(-(1 << 63), -1)), copies=st.integers(1, 3))
def test_references_to_tensors_that_do_not_exist_are_counted_and_left_out(node: int, role: str, missing: int,
                                                                           copies: int, tmp_path: Path) -> None:
    outcome = _read(tmp_path, _file(_graph_with(0, lambda g: g["nodes"][node][role].extend([missing] * copies))))
    [unlinked] = _ledger(outcome, "unlinked", "dropped")
    assert unlinked.rows == copies and unlinked.tables == "memory_node_tensor"
    assert _rank(outcome, "memory_node_tensor") == sum(_refs(g, t["tensor_id"]) for g in GRAPHS for t in g["tensors"])
    assert _rank(outcome, "memory_tensor") == sum(len(g["tensors"]) for g in GRAPHS)


@FUZZ
@given(pick=st.integers(0, 99), start=st.integers(1, 9), back=st.integers(1, 9))
def test_a_lifetime_that_ends_before_it_starts_is_kept_off_the_curve(pick: int, start: int, back: int,
                                                                     tmp_path: Path) -> None:
    located = [t for t in GRAPHS[0]["tensors"] if live_range(t, 10)]
    tensor = located[pick % len(located)]

    def change(g: dict) -> None:
        t = next(t for t in g["tensors"] if t["tensor_id"] == tensor["tensor_id"])
        t.update(life_long="LifeLongNone", life_start=start, life_end=start - back)

    outcome = _read(tmp_path, _file(_graph_with(0, change)))
    rows = _rows(outcome.tables["memory_tensor"], 0, "tensor_id", "first_node", "life_start", "life_end")
    assert (tensor["tensor_id"], None, start, start - back) in rows
    assert sum(e.rows for e in _ledger(outcome, "negative_duration", "excluded")) == 2  # this one and the fixture's
    _check_invariants(outcome)


@FUZZ
@given(node=st.integers(0, 9), junk=st.binary(min_size=1, max_size=4).filter(lambda b: b[0] >= 0x80))
def test_a_name_that_is_not_utf8_is_repaired_and_counted(node: int, junk: bytes, tmp_path: Path) -> None:
    broken = b"\xff" + junk + GRAPHS[0]["nodes"][node]["name"].encode()
    payloads = [gen.encode_graph({**GRAPHS[0], "nodes": [{**n, "name": broken} if i == node else n
                                                         for i, n in enumerate(GRAPHS[0]["nodes"])]}), *PAYLOADS[1:]]
    outcome = _read(tmp_path, _file(payloads))
    names = [n for g, n in _rows(outcome.tables["memory_node"], 0, "graph_id", "node_name") if g == 0]
    assert names[node] == broken.decode("utf-8", errors="replace")
    [repaired] = _ledger(outcome, "bad_encoding", "repaired")
    assert repaired.rows == 1 and repaired.offset < BOUNDS[1]
    assert _rank(outcome, "memory_node") == sum(len(g["nodes"]) for g in GRAPHS)


@FUZZ
@given(pick=st.integers(0, 99), size=st.integers(0, 1 << 40))
def test_a_repeated_tensor_id_keeps_the_last_copy_as_mindspore_does(pick: int, size: int, tmp_path: Path) -> None:
    tensor = GRAPHS[0]["tensors"][pick % len(GRAPHS[0]["tensors"])]
    outcome = _read(tmp_path, _file(_graph_with(0, lambda g: g["tensors"].append({**tensor, "size": size}))))
    sizes = [s for g, t, s in _rows(outcome.tables["memory_tensor"], 0, "graph_id", "tensor_id", "bytes")
             if (g, t) == (0, tensor["tensor_id"])]
    assert sizes == [size]
    [duplicate] = _ledger(outcome, "duplicate_record", "dropped")
    assert duplicate.rows == 1 and duplicate.tables == "memory_tensor"


@pytest.mark.parametrize("body, check", [
    (b"\x08" + b"\xff" * 10 + b"\x01", "malformed_record"),  # a varint longer than 64 bits
    (b"\x0a\x01\x00", "malformed_record"),  # graph_id with wire type 2
    (b"\x1a\xff\x7f", "malformed_record"),  # a node whose length runs past the graph
    (b"\x0b", "malformed_record"),  # wire type 3 (a group)
])
def test_a_graph_that_breaks_the_wire_format_is_dropped_whole(body: bytes, check: str, tmp_path: Path) -> None:
    outcome = _read(tmp_path, _file([PAYLOADS[0], body + PAYLOADS[1], PAYLOADS[2]]))
    assert sorted(g for g, in _rows(outcome.tables["memory_graph"], 0, "graph_id")) == [0, 5]
    [dropped] = _ledger(outcome, check, "dropped")
    start = BOUNDS[1] + 2 + (len(body) + len(PAYLOADS[1]) >= 128)  # the graph's payload, after its tag and length
    assert dropped.rows == 1 and start <= dropped.offset < start + len(body)


def test_deep_and_huge_fields_cost_only_themselves(tmp_path: Path) -> None:
    deep = b""
    for _ in range(5000):  # an unknown field 5000 messages deep: skipped by its length, never descended into
        deep = gen.len_field(1, deep, keep_empty=True)
    huge = 200_000  # one node listing tensor 0 200,000 more times as input (packed): one reference kept
    payloads = _graph_with(0, lambda g: g["nodes"][3]["inputs"].extend([0] * huge))
    outcome = _read(tmp_path, _file(payloads, tail=gen.len_field(15, deep)))
    [unknown] = _ledger(outcome, "unknown_tag", "dropped")
    assert unknown.example == "15, 2" and unknown.offset == len(_file(payloads))
    [duplicate] = _ledger(outcome, "duplicate_record", "dropped")
    assert duplicate.rows == huge - 1 and duplicate.tables == "memory_node_tensor"
    refs = sum(_refs(g, t["tensor_id"]) for g in GRAPHS for t in g["tensors"])
    assert _rank(outcome, "memory_node_tensor") == refs + 1
    assert _rank(outcome, "memory_tensor") == sum(len(g["tensors"]) for g in GRAPHS)


def test_a_huge_total_or_static_size_is_counted_not_summed(tmp_path: Path) -> None:
    big = _graph_with(1, lambda g: g.update(static_mem=(1 << 62) - 1000))  # with graph 0, beyond 2^62 bytes
    outcome = _read(tmp_path, _file(big, total_mem=(1 << 63) + 5))
    assert set(outcome.tables["memory_graph"].column("capacity_bytes").to_pylist()) == {None}
    assert sorted(g for g, in _rows(outcome.tables["memory_graph"], 0, "graph_id")) == [0, 5]
    dropped = _ledger(outcome, "out_of_range", "dropped")
    assert sorted(e.example for e in dropped) == sorted([str((1 << 63) + 5 - (1 << 64)), str((1 << 62) - 1000)])
    _check_invariants(outcome)


def test_a_source_without_times_joins_the_first_capture_that_lacks_its_family():
    spans = [SourceSpan(Path("raw"), 0, "ascend_raw", "a", "epoch", 10, 20),
             SourceSpan(Path("raw2"), 0, "ascend_raw", "b", "epoch", 100, 200),
             SourceSpan(Path("pb"), 0, "mindspore_memory", "a/profiler", "unix_epoch", None, None),
             SourceSpan(Path("pb2"), 0, "mindspore_memory", "b/profiler", "unix_epoch", None, None),
             SourceSpan(Path("pb3"), 0, "mindspore_memory", "c/profiler", "unix_epoch", None, None)]
    numbers, events = number_captures(spans)
    # before this rule each .pb opened a capture of its own (2, 3 and 4), apart from the data it was written with
    assert numbers == {Path("raw"): 0, Path("raw2"): 1, Path("pb"): 0, Path("pb2"): 1, Path("pb3"): 2}
    assert [e.check for e in events] == ["ambiguous"]  # the third .pb's cycle can be placed by no time
    assert number_captures(spans[:4]) == ({Path("raw"): 0, Path("raw2"): 1, Path("pb"): 0, Path("pb2"): 1}, [])


def test_a_file_beyond_the_bound_is_refused_by_its_size_and_costs_only_itself(tmp_path: Path, monkeypatch) -> None:
    from profpipe.ingest import memory_usage_pb

    big = _file(PAYLOADS, tail=gen.len_field(15, bytes(100_000)))  # rank 0's file, larger than rank 1's 79 kB
    monkeypatch.setattr(memory_usage_pb, "MAX_PROTOBUF_BYTES", 90_000)  # 64 MiB in earnest
    outcome = _read(tmp_path, big, other_rank=True)
    assert _rank(outcome, "memory_graph") == 0 and _rank(outcome, "memory_node", 1) == RANK1_NODES
    [refused] = _ledger(outcome, "malformed_record", "dropped")
    assert f"{len(big)} bytes, more than the 90000" in refused.message
