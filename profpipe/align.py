"""`profpipe diff A B --align ops`: compare two runs op by op along the framework's op sequence, so that a GPU
run and an NPU run of the same model can be compared although their op and kernel names differ (after
msprof-analyze's compare_tools and TraceLens' TraceDiff).

Per side (one analysed run; its lowest rank with ops):

1. The op sequence of every sample unit (a step of step_phases, per capture; a capture without steps is one
   unit): the framework ops of host_op in start order, top-level only (an op inside another selected op of the
   same thread, e.g. aten::cudnn_convolution inside aten::conv2d, is left out). Which ops: MindSpore GPU's
   device-side ops (side 'Device') when the rank has any, else PyTorch's cpu_op and MindSpore's ops (category
   NULL); the step spans (ProfilerStep#N) never, nor the autograd engine's wrappers (autograd::engine::
   evaluate_function: <node>, category 'backward' in Kineto but a plain cpu_op in a torch_npu result), so that
   the autograd node and what runs beside it (the bias gradient's aten::sum) are ops on both sides. A rank without
   framework ops (an msprof export) uses its device ops instead: the device executions grouped by their owning op
   (int_device_exec.op_name), typed by device_op_stats.op_type, plus the collectives of collective_exec (typed by
   collective_type) not already there.
2. The kernels each op launched (device_exec, through int_device_exec): a kernel whose owning op name is one op
   of the unit's sequence belongs to it; else the top-level op whose host interval holds the kernel's launch: the
   start of the host op that launched it (device_exec.op_index: Kineto's External id, torch_npu's connection),
   else the runtime call with its correlation id, else the kernel's start.
3. The representative step: the unit whose canonical type sequence is the most common one (the earliest of
   them). An op of it is identified by (op name, occurrence of that name in the unit); its times are averaged
   over all units of the side, per step (a unit without it counts 0).

The two representative sequences of canonical types are aligned with difflib.SequenceMatcher (autojunk off):
its matching blocks pair ops of equal canonical type ('both'); everything between them, deleted, inserted or
replaced, is reported one-sided ('only_a', 'only_b') rather than paired across types. SequenceMatcher finds
longest matching blocks recursively: not always a longest common subsequence, but stable and fast on sequences
of a few thousand ops.

Canonical op types (`canonical_type`): the type is lower-cased and reduced to letters and digits after
stripping a namespace (aten::, c10d::, nccl:, hcom_, Hcom...), a trailing in-place underscore, a MindSpore
'-opN' suffix, a CANN version suffix (V2, V3) and the number of a PyTorch autograd node (ReluBackward0); then
CANONICAL maps the known spellings of both frameworks onto one name (conv2d, conv2d_backward, matmul, relu,
relu_backward, max_pool2d(_backward), avg_pool2d(_backward), cross_entropy, nll_loss(_backward),
log_softmax(_backward), softmax, layer_norm, batch_norm, ...; CANN's scalar forms Muls and Adds are mul and add). Any other type stays its reduced form, so Add and aten::add meet as 'add'. Only ops computing the same
thing meet, however each framework splits the work:

* the backward of a matrix product is 'matmul' (PyTorch's AddmmBackward0 / MmBackward0 nodes run the products
  of the input and weight gradients, an NPU's gradient MatMul ops are typed MatMul);
* CANN's BiasAddGrad, the sum of the gradient over the batch, is 'sum' as PyTorch's bias gradient (aten::sum
  outside the AddmmBackward0 node) and ReduceSum are;
* 'cross_entropy' is PyTorch's cross_entropy_loss and the fused softmax cross-entropy of MindSpore/CANN
  (SoftmaxCrossEntropyWithLogits, SparseSoftmaxCrossEntropyWithLogits); its parts stay apart (OneHot,
  ReduceMean; nll_loss, log_softmax), as do the optimizers' ops (aten::_foreach_add_ is no SGD op).

The time of an op on a side (time_a_ns / time_b_ns) is its device time per step (its kernels' summed
durations) when it launched kernels there, else its own host duration per step; both are given too.
"""
from __future__ import annotations

import difflib
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import duckdb
import pyarrow as pa

#: Canonical op types, keyed by the reduced spelling (lower case, letters and digits only).
CANONICAL = {
    # convolution
    "conv2d": "conv2d", "convolution": "conv2d", "cudnnconvolution": "conv2d", "conv2dv2": "conv2d",
    "convolutionbackward": "conv2d_backward", "conv2dbackpropinput": "conv2d_backward",
    "conv2dbackpropfilter": "conv2d_backward", "cudnnconvolutionbackward": "conv2d_backward",
    "convolutionbackwardoverrideable": "conv2d_backward",
    # matrix multiplication
    "matmul": "matmul", "mm": "matmul", "addmm": "matmul", "bmm": "matmul", "baddbmm": "matmul",
    "linear": "matmul", "batchmatmul": "matmul", "dense": "matmul",
    "addmmbackward": "matmul", "mmbackward": "matmul", "bmmbackward": "matmul",
    "biasaddgrad": "sum", "reducesum": "sum",
    # activations, normalisation
    "relu": "relu", "threshold": "relu", "relugrad": "relu_backward", "thresholdbackward": "relu_backward",
    "relubackward": "relu_backward",
    "gelu": "gelu", "fastgelu": "gelu", "gelubackward": "gelu_backward", "gelugrad": "gelu_backward",
    "softmax": "softmax", "logsoftmax": "log_softmax", "softmaxbackwarddata": "softmax_backward",
    "softmaxgrad": "softmax_backward",
    "logsoftmaxbackward": "log_softmax_backward", "logsoftmaxbackwarddata": "log_softmax_backward",
    "logsoftmaxgrad": "log_softmax_backward",
    "layernorm": "layer_norm", "nativelayernorm": "layer_norm", "layernormbackward": "layer_norm_backward",
    "nativelayernormbackward": "layer_norm_backward", "layernormgrad": "layer_norm_backward",
    "batchnorm": "batch_norm", "nativebatchnorm": "batch_norm", "cudnnbatchnorm": "batch_norm",
    "fusedbatchnorm": "batch_norm", "bntrainingupdate": "batch_norm", "bntrainingreduce": "batch_norm",
    # pooling, elementwise
    "maxpool2d": "max_pool2d", "maxpool": "max_pool2d", "maxpoolwithargmax": "max_pool2d",
    "maxpool2dwithindices": "max_pool2d",
    "maxpool2dwithindicesbackward": "max_pool2d_backward", "maxpoolgrad": "max_pool2d_backward",
    "maxpoolgradwithargmax": "max_pool2d_backward",
    "avgpool2d": "avg_pool2d", "avgpool": "avg_pool2d", "adaptiveavgpool2d": "avg_pool2d",
    "avgpool2dbackward": "avg_pool2d_backward", "avgpoolgrad": "avg_pool2d_backward",
    "adaptiveavgpool2dbackward": "avg_pool2d_backward", "adaptiveavgpool2dgrad": "avg_pool2d_backward",
    # losses
    "crossentropyloss": "cross_entropy", "softmaxcrossentropywithlogits": "cross_entropy",
    "sparsesoftmaxcrossentropywithlogits": "cross_entropy",
    "nllloss": "nll_loss", "nlllossnd": "nll_loss", "nlllossforward": "nll_loss",
    "nlllossbackward": "nll_loss_backward", "nlllossgrad": "nll_loss_backward",
    "add": "add", "adds": "add", "biasadd": "bias_add", "mul": "mul", "muls": "mul", "sub": "sub", "div": "div", "realdiv": "div",
    "dropout": "dropout", "dropoutdomask": "dropout", "nativedropout": "dropout",
    "embedding": "embedding", "gather": "embedding", "gatherv2": "embedding",
    # collectives
    "allreduce": "allreduce", "allgather": "allgather", "allgatherintotensor": "allgather",
    "reducescatter": "reducescatter", "reducescattertensor": "reducescatter", "broadcast": "broadcast",
    "alltoall": "alltoall", "alltoallv": "alltoall", "alltoallbase": "alltoall", "send": "send",
    "recv": "recv", "barrier": "barrier",
}
#: The canonical types that are collectives (the per collective type summary).
COLLECTIVES = frozenset({"allreduce", "allgather", "reducescatter", "broadcast", "alltoall", "send", "recv",
                         "barrier"})

_PREFIX = re.compile(r"^(?:[A-Za-z0-9_]+::|nccl:|hcom_?|Hcom(?=[A-Z]))", re.IGNORECASE)
_OP_SUFFIX = re.compile(r"-op\d+(?:_\d+)?$")
_VERSION = re.compile(r"(?<=[a-z])V\d+$")
_AUTOGRAD_NODE = re.compile(r"(?<=Backward)\d+$")  # PyTorch's autograd nodes: ConvolutionBackward0


def canonical_type(op_type: str | None) -> str:
    """The canonical type of an op type of either framework (module docstring)."""
    text = (op_type or "").strip()
    text = _OP_SUFFIX.sub("", text.rsplit("/", 1)[-1])
    text = _PREFIX.sub("", text)
    text = _AUTOGRAD_NODE.sub("", _VERSION.sub("", text)).rstrip("_")
    reduced = re.sub(r"[^a-z0-9]", "", text.lower())
    return CANONICAL.get(reduced, reduced or "unknown")


SCHEMA = pa.schema([
    ("position", pa.int64()), ("status", pa.string()), ("canonical_type", pa.string()),
    ("index_a", pa.int64()), ("index_b", pa.int64()),
    ("op_type_a", pa.string()), ("op_type_b", pa.string()), ("op_name_a", pa.string()), ("op_name_b", pa.string()),
    ("time_a_ns", pa.float64()), ("time_b_ns", pa.float64()), ("difference_ns", pa.float64()),
    ("host_a_ns", pa.float64()), ("host_b_ns", pa.float64()), ("device_a_ns", pa.float64()), ("device_b_ns", pa.float64()),
    ("kernels_a", pa.float64()), ("kernels_b", pa.float64()),
    ("top_kernel_a", pa.string()), ("top_kernel_b", pa.string()),
])
TYPE_SCHEMA = pa.schema([
    ("canonical_type", pa.string()), ("ops_a", pa.int64()), ("ops_b", pa.int64()), ("matched", pa.int64()),
    ("time_a_ns", pa.float64()), ("time_b_ns", pa.float64()), ("difference_ns", pa.float64()),
])


@dataclass
class _Op:
    """One op of a side's representative step, its figures averaged per step over the side's units."""
    op_name: str
    op_type: str
    canonical: str
    host_ns: float | None = None
    device_ns: float = 0.0
    kernels: float = 0.0
    kernel_time: Counter = field(default_factory=Counter)

    @property
    def time_ns(self) -> float | None:
        return self.device_ns if self.kernels else self.host_ns

    @property
    def top_kernel(self) -> str | None:
        return self.kernel_time.most_common(1)[0][0] if self.kernel_time else None


@dataclass
class Side:
    """One run's representative op sequence and what `align_runs` reports of it."""
    rank: int | None
    source: str  # 'host_op', 'device_op' or 'none'
    units: int
    representative: tuple | None  # (capture, step)
    ops: list[_Op]
    peak_allocated_bytes: int | None
    peak_reserved_bytes: int | None

    def summary(self) -> dict:
        return {"rank": self.rank, "source": self.source, "steps": self.units,
                "representative_capture": None if self.representative is None else self.representative[0],
                "representative_step": None if self.representative is None else self.representative[1],
                "ops": len(self.ops), "peak_allocated_bytes": self.peak_allocated_bytes,
                "peak_reserved_bytes": self.peak_reserved_bytes}


def read_side(con: duckdb.DuckDBPyConnection) -> Side:
    """The op sequence of one run (module docstring, steps 1 to 3)."""
    ranks = [r[0] for r in con.sql("SELECT DISTINCT rank FROM stg_host_op WHERE op_type IS NOT NULL "
                                   "UNION SELECT DISTINCT rank FROM int_device_exec WHERE op_name IS NOT NULL "
                                   "ORDER BY 1").fetchall()]
    memory = _memory(con, ranks[0] if ranks else None)
    if not ranks:
        return Side(None, "none", 0, None, [], *memory)
    rank = ranks[0]
    steps = con.sql("SELECT capture, step, start_ns, end_ns FROM step_phases WHERE rank = $1 ORDER BY capture, start_ns",
                    params=[rank]).fetchall()
    ops, source = _host_ops(con, rank), "host_op"
    kernels = con.sql(
        "SELECT d.capture, d.name, d.op_name, d.dur_ns, coalesce(h.start_ns, a.start_ns, d.start_ns) AS placed_ns, "
        "  d.start_ns "
        "FROM (SELECT * FROM int_device_exec WHERE rank = $1 AND dur_ns IS NOT NULL) d "
        "LEFT JOIN (SELECT capture, op_index, start_ns FROM stg_host_op WHERE rank = $1 AND op_index IS NOT NULL) h "
        "  ON h.capture = d.capture AND h.op_index = d.op_index "
        "LEFT JOIN (SELECT capture, correlation, min(start_ns) AS start_ns FROM stg_host_api WHERE rank = $1 "
        "  AND correlation IS NOT NULL GROUP BY ALL) a ON a.capture = d.capture AND a.correlation = d.correlation "
        "ORDER BY d.start_ns", params=[rank]).fetchall()
    if not ops:
        ops, source = _device_ops(con, rank, kernels), "device_op"
    units: dict[tuple, list[dict]] = defaultdict(list)
    windows = defaultdict(list)
    for capture, step, start, end in steps:
        windows[capture].append((start, end, step))
    for op in ops:
        unit = _unit(windows, op["capture"], op["start_ns"])
        if unit is not None:
            units[unit].append(op)
    for capture, name, op_name, dur, placed, start in kernels:
        _attribute(units, windows, capture, name, op_name, dur, placed, start, source)
    if not units:
        return Side(rank, source, 0, None, [], *memory)
    sequences = {unit: tuple(o["canonical"] for o in unit_ops) for unit, unit_ops in units.items()}
    common = Counter(sequences.values()).most_common(1)[0][0]
    representative = min(u for u, s in sequences.items() if s == common)
    n = len(units)
    by_key: dict[tuple, _Op] = {}
    ordered: list[_Op] = []
    for unit in sorted(units, key=lambda u: (u != representative, u)):
        seen = Counter()
        for o in units[unit]:
            key = (o["op_name"], seen[o["op_name"]])
            seen[o["op_name"]] += 1
            if key not in by_key:
                if unit != representative:
                    continue  # an op the representative step does not have
                by_key[key] = _Op(o["op_name"], o["op_type"], o["canonical"],
                                  None if o["dur_ns"] is None else 0.0)
                ordered.append(by_key[key])
            item = by_key[key]
            if o["dur_ns"] is not None:
                item.host_ns = (item.host_ns or 0.0) + o["dur_ns"]
            for kernel, kernel_dur in o["kernels"]:
                item.kernels += 1
                item.device_ns += kernel_dur
                item.kernel_time[kernel] += kernel_dur
    for item in ordered:  # sums over the units -> per step
        item.kernels /= n
        item.device_ns /= n
        item.host_ns = None if item.host_ns is None else item.host_ns / n
    return Side(rank, source, n, representative, ordered, *memory)


def _host_ops(con, rank: int) -> list[dict]:
    """The rank's top-level framework ops (module docstring, step 1)."""
    rows = con.sql(
        "WITH ops AS (SELECT * FROM stg_host_op WHERE rank = $1 AND op_type IS NOT NULL AND dur_ns IS NOT NULL "
        "  AND NOT regexp_matches(op_name, '^Profiler?Step#[0-9]+$') "
        "  AND NOT starts_with(op_name, 'autograd::engine::evaluate_function:')) "
        "SELECT capture, tid, op_name, op_type, start_ns, dur_ns FROM ops "
        "WHERE CASE WHEN (SELECT count(*) FROM ops WHERE side = 'Device') > 0 THEN side = 'Device' "
        "  ELSE category IS NULL OR category = 'cpu_op' END "
        "ORDER BY capture, tid NULLS FIRST, start_ns, dur_ns DESC", params=[rank]).fetchall()
    kept, open_until = [], {}
    for capture, tid, op_name, op_type, start, dur in rows:
        thread = (capture, tid)
        if thread in open_until and start < open_until[thread]:
            continue  # nested in the thread's enclosing top-level op
        open_until[thread] = start + dur
        kept.append({"capture": capture, "op_name": op_name, "op_type": op_type, "canonical": canonical_type(op_type),
                     "start_ns": start, "end_ns": start + dur, "dur_ns": dur, "kernels": []})
    kept.sort(key=lambda o: (o["capture"], o["start_ns"]))
    return kept


def _device_ops(con, rank: int, kernels: list) -> list[dict]:
    """A rank without framework ops: its device ops and collectives (module docstring, step 1)."""
    types = dict(con.sql("SELECT op_name, any_value(op_type) FROM device_op_stats WHERE rank = $1 GROUP BY op_name",
                         params=[rank]).fetchall())
    ops: list[dict] = []
    current: dict[int, dict] = {}
    for capture, _, op_name, _, _, start in kernels:
        if op_name is None:
            continue
        last = current.get(capture)
        if last is None or last["op_name"] != op_name:  # a new execution of an op: the owner changed
            last = {"capture": capture, "op_name": op_name, "op_type": types.get(op_name) or _short_type(op_name),
                    "start_ns": start, "dur_ns": None, "kernels": []}
            last["canonical"] = canonical_type(last["op_type"])
            current[capture] = last
            ops.append(last)
    named = {o["op_name"] for o in ops}
    for capture, name, collective_type, start, dur in con.sql(
            "SELECT capture, name, collective_type, start_ns, dur_ns FROM collective_exec WHERE rank = $1",
            params=[rank]).fetchall():
        if name not in named and start is not None:
            ops.append({"capture": capture, "op_name": name, "op_type": collective_type, "start_ns": start,
                        "dur_ns": dur, "kernels": [], "canonical": canonical_type(collective_type)})
    ops.sort(key=lambda o: (o["capture"], o["start_ns"]))
    return ops


def _short_type(op_name: str) -> str:
    return _OP_SUFFIX.sub("", op_name.rsplit("/", 1)[-1])


def _unit(windows: dict, capture: int, ns: int) -> tuple | None:
    """The (capture, step) whose window holds `ns`; a capture without steps is one unit (step None)."""
    spans = windows.get(capture)
    if not spans:
        return (capture, None)
    for start, end, step in spans:
        if start <= ns < end:
            return (capture, step)
    return None


def _attribute(units, windows, capture, name, op_name, dur, placed, start, source) -> None:
    """Give one kernel execution to the op that launched it (module docstring, step 2)."""
    if source == "device_op":
        unit = _unit(windows, capture, start)
        if unit in units and op_name is not None:
            owners = [op for op in units[unit] if op["op_name"] == op_name and op["start_ns"] <= start]
            if owners:
                owners[-1]["kernels"].append((name, dur))
        return
    unit = _unit(windows, capture, placed)
    candidates = units.get(unit, ())
    if op_name is not None:
        named = [op for op in candidates if op["op_name"] == op_name]
        if len(named) == 1:
            named[0]["kernels"].append((name, dur))
            return
    for op in candidates:
        if op["start_ns"] <= placed < op["end_ns"]:
            op["kernels"].append((name, dur))
            return


def _memory(con, rank) -> tuple[int | None, int | None]:
    row = con.sql("SELECT max(peak_allocated_bytes), max(peak_reserved_bytes) FROM memory_peak "
                  "WHERE rank = $1 OR $1 IS NULL", params=[rank]).fetchall()[0]
    return row[0], row[1]


def device_types(con: duckdb.DuckDBPyConnection) -> frozenset[str]:
    """The device types a run's ranks ran on (run_info.device_type: cpu, gpu, ascend)."""
    return frozenset(t for (t,) in con.sql("SELECT DISTINCT device_type FROM run_info WHERE device_type IS NOT NULL")
                     .fetchall())


def needs_op_alignment(a: duckdb.DuckDBPyConnection, b: duckdb.DuckDBPyConnection) -> bool:
    """`diff --align auto`: two runs on different devices (a GPU run and an NPU run) share almost no kernel or op
    name, so they are aligned op by op; runs on the same device type are matched by name."""
    types_a, types_b = device_types(a), device_types(b)
    return bool(types_a and types_b and types_a != types_b)


def align_runs(a: duckdb.DuckDBPyConnection, b: duckdb.DuckDBPyConnection) -> dict:
    """Align run B's op sequence on run A's. Returns {'a': side summary, 'b': side summary, 'ops': the aligned
    ops (SCHEMA), 'op_types': per canonical type (TYPE_SCHEMA), 'collectives': the collective types among them}."""
    side_a, side_b = read_side(a), read_side(b)
    return align_sides(side_a, side_b)


def align_sides(side_a: Side, side_b: Side) -> dict:
    """`align_runs` over two sides already read."""
    types_a = [o.canonical for o in side_a.ops]
    types_b = [o.canonical for o in side_b.ops]
    matcher = difflib.SequenceMatcher(None, types_a, types_b, autojunk=False)
    rows: list[dict] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2)):
                rows.append(_row(side_a.ops[i], i, side_b.ops[j], j))
        else:
            rows += [_row(side_a.ops[i], i, None, None) for i in range(i1, i2)]
            rows += [_row(None, None, side_b.ops[j], j) for j in range(j1, j2)]
    for position, row in enumerate(rows, 1):
        row["position"] = position
    per_type: dict[str, dict] = {}
    for row in rows:
        entry = per_type.setdefault(row["canonical_type"], {
            "canonical_type": row["canonical_type"], "ops_a": 0, "ops_b": 0, "matched": 0,
            "time_a_ns": 0.0, "time_b_ns": 0.0})
        entry["ops_a"] += row["index_a"] is not None
        entry["ops_b"] += row["index_b"] is not None
        entry["matched"] += row["status"] == "both"
        entry["time_a_ns"] += row["time_a_ns"] or 0.0
        entry["time_b_ns"] += row["time_b_ns"] or 0.0
    types = [{**e, "difference_ns": e["time_b_ns"] - e["time_a_ns"]} for e in per_type.values()]
    types.sort(key=lambda e: (-abs(e["difference_ns"]), e["canonical_type"]))
    return {"a": side_a.summary(), "b": side_b.summary(),
            "ops": pa.Table.from_pylist(rows, schema=SCHEMA),
            "op_types": pa.Table.from_pylist(types, schema=TYPE_SCHEMA),
            "collectives": pa.Table.from_pylist([t for t in types if t["canonical_type"] in COLLECTIVES],
                                                schema=TYPE_SCHEMA)}


def _row(op_a: _Op | None, index_a, op_b: _Op | None, index_b) -> dict:
    status = "both" if op_a is not None and op_b is not None else "only_a" if op_a is not None else "only_b"
    row = {"position": 0, "status": status, "canonical_type": (op_a or op_b).canonical,
           "index_a": index_a, "index_b": index_b}
    for suffix, op in (("a", op_a), ("b", op_b)):
        row |= {f"op_type_{suffix}": op and op.op_type, f"op_name_{suffix}": op and op.op_name,
                f"time_{suffix}_ns": op and op.time_ns, f"host_{suffix}_ns": op and op.host_ns,
                f"device_{suffix}_ns": op and op.device_ns, f"kernels_{suffix}": op and op.kernels,
                f"top_kernel_{suffix}": op and op.top_kernel}
    both = row["time_a_ns"] is not None and row["time_b_ns"] is not None
    row["difference_ns"] = row["time_b_ns"] - row["time_a_ns"] if both else None
    return row
