"""MindSpore-compatible Ascend reports: the files MindSpore 0.5-1.x wrote from raw device data that are not
plain CSVs, formatted from the rows of their report models (sql/reports).

Per Ascend rank N (ascend_rank: its device id): output_timeline_data_N.txt (report output_timeline_data),
output_op_compute_time_N.txt and output_op_compute_time_detail_N.txt (aicore_intermediate_detail's rows),
step_trace_raw_N_detail_time.csv (step_trace_raw), step_trace_point_info[_N].json (step_trace_point_info),
(ascend_)timeline_display_N.json with its summary (ascend_timeline_display), hccl_raw_N.csv (hccl_raw) and
output_data_preprocess_aicpu_N.txt (output_data_preprocess_aicpu). The plain CSVs (framework_raw_N.csv,
aicore_intermediate_N_{detail,type}.csv) are report models the generic writer (mindspore_reports.py) writes.
Each file here reads its report with a one-line query for the rank (and profiling cycle); the SQL that
computes the rows lives in the model library, and the step trace's lines and averages and the timeline summary's
counts in sql/queries/ascend_*.sql. Op and task files cover all of a rank's profiling cycles
together; the step-keyed files (step trace, point info, hccl_raw) are written per cycle, a later cycle's with
`_capture<c>` before the extension.

Numbers are computed the way MindSpore computes them, down to the float arithmetic (per-op averages are a
left-to-right sum of per-execution milliseconds, printed like Python prints floats), so the files compare
equal to MindSpore's. Where MindSpore versions disagree, `ReportOptions.style` picks the behaviour (docs/mindspore.md,
"Ascend reports"):

* "latest" (default): step-trace average over all steps and communication columns named
  `stream_<id>_<k>_<op>`; aicore type table with total time, executions and a fraction;
  framework_raw in the later 9/10-column layout; `ascend_timeline_display_N.json` with process
  and thread names; the AI CPU table in MindSpore's later aligned layout.
* "legacy" (MindSpore r0.5-r1.0 / MindInsight 0.x): average over steps 2..N, columns
  `stream_<id>_parallel_<k>`, per-step type table in percent, the 8-column framework_raw,
  `timeline_display_N.json`, the space-separated AI CPU table.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import duckdb
import numpy as np

from ..models import load_models, query
from ..options import ReportOptions
from .text_stream import write_text_column
from .text_table import simple_table

_TITLE = "====================op compute time===================="


def write_ascend_reports(con: duckdb.DuckDBPyConnection, reports_dir: Path, options: ReportOptions,
                         built: frozenset[str] | None = None) -> list[Path]:
    """Write the compatible files of every Ascend rank, each only where its report is among the models `built`
    (--select; None: every model); return their paths."""
    written: list[Path] = []
    # ranks read from device-counter data (raw dumps, MindSpore 1.x result folders); msprof
    # exports carry host-clock times and MindSpore 2.x reports of their own
    for rank, device in con.execute("SELECT rank, device_id FROM ascend_rank ORDER BY rank").fetchall():
        written += _RankReports(con, reports_dir, rank, device, options, built).write_all()
    return written


class _RankReports:
    def __init__(self, con: duckdb.DuckDBPyConnection, folder: Path, rank: int, device: int,
                 options: ReportOptions, built: frozenset[str] | None = None) -> None:
        self.con, self.folder, self.rank, self.device, self.options = con, folder, rank, device, options
        self.built = built
        self.capture = 0  # the profiling cycle the step-keyed files are written for (see write_all)
        self.written: list[Path] = []

    def write_all(self) -> list[Path]:
        self.folder.mkdir(parents=True, exist_ok=True)
        ops = self._report("aicore_intermediate_detail", "full_op_name, task_duration, stream_id, "
                           "execution_frequency, op_type, subgraph, short_name")
        if ops and self._wanted("output_timeline_data"):
            self._timeline_data()
        if ops and self._wanted("aicore_intermediate_detail"):
            self._op_compute_time(ops)
            self._op_compute_time_detail(ops)
        aicpu = self._report("output_data_preprocess_aicpu", 'serial_number, node_type_name, "total_time(ms)", '
                             '"dispatch_time(ms)", run_start, run_end')
        if (ops or aicpu) and self._wanted("ascend_timeline_display"):
            self._timeline_display()
        if aicpu and self._wanted("output_data_preprocess_aicpu"):
            self._aicpu(aicpu)
        # step-keyed files, once per profiling cycle of the rank: a later cycle's files carry _capture<c>
        for (self.capture,) in self.con.execute("SELECT capture FROM step_trace_raw WHERE rank = $1 UNION "
                                                "SELECT capture FROM hccl_raw WHERE rank = $1 ORDER BY 1",
                                                [self.rank]).fetchall():
            for report, write in (("step_trace_raw", self._step_trace), ("step_trace_point_info", self._point_info),
                                  ("hccl_raw", self._hccl_raw)):
                if self._wanted(report):
                    write()
        return self.written

    # ---- helpers ---------------------------------------------------------------------------
    def _report_sql(self, name: str, columns: str, per_capture: bool = False) -> str:
        """SELECT `columns` of the rank's rows ($rank) of report `name` (of the capture $capture for a step-keyed one),
        in the report's csv_order; its parameters: `_params`."""
        order = next(m.csv_order for m in load_models() if m.name == name)
        where = "rank = $rank" + (" AND capture = $capture" if per_capture else "")
        return f"SELECT {columns} FROM {name} WHERE {where}" + (f" ORDER BY {order}" if order else "")

    def _params(self, per_capture: bool = False, **more: object) -> dict[str, object]:
        """The parameters of `_report_sql` and of the sql/queries/ascend_*.sql queries: $rank ($capture), `more`."""
        return {"rank": self.rank, **({"capture": self.capture} if per_capture else {}), **more}

    def _wanted(self, report: str) -> bool:
        """Whether the run built `report` (every report without a selection)."""
        return self.built is None or report in self.built

    def _report(self, name: str, columns: str, per_capture: bool = False) -> list[tuple]:
        return self.con.execute(self._report_sql(name, columns, per_capture), self._params(per_capture)).fetchall()

    def _path(self, name: str, per_capture: bool = False) -> Path:
        """reports/<name>; for a step-keyed file of a later capture, `_capture<c>` before the extension."""
        if per_capture and self.capture:
            stem, dot, extension = name.rpartition(".")
            name = f"{stem}_capture{self.capture}{dot}{extension}"
        path = self.folder / name
        self.written.append(path)
        return path

    def _text(self, name: str, text: str, per_capture: bool = False) -> None:
        self._path(name, per_capture).write_text(text, encoding="utf-8")

    # ---- op timing -------------------------------------------------------------------------
    def _timeline_data(self) -> None:
        with open(self._path(f"output_timeline_data_{self.device}.txt"), "wb") as handle:
            handle.write(b"op_name, stream_id, start_time(ms), duration(ms)\n")
            write_text_column(self.con, self._report_sql("output_timeline_data", "line || chr(10)"), handle,
                              self._params())

    def _op_compute_time(self, ops: list[tuple]) -> None:
        total = 0.0
        for op in ops:
            total += op[1]
        lines = [_TITLE, "op_name       compute_time(ms) stream_id", "------------  ---------------  ---------"]
        lines += [f"{name} {avg!r}  {stream}" for name, avg, stream, *_ in ops]
        lines.append(f"total op  {total!r} 0")
        self._text(f"output_op_compute_time_{self.device}.txt", "\n".join(lines) + "\n")

    def _op_compute_time_detail(self, ops: list[tuple]) -> None:
        types: dict[str, list[tuple]] = {}
        for op in ops:
            types.setdefault(op[4], []).append(op)
        grand = sum(op[1] for op in ops)
        type_rows = sorted(((t, sum(o[1] for o in members), len(members)) for t, members in types.items()),
                           key=lambda row: -row[1])
        table = [(t, round(time, 6), count, round(time / grand * 100, 2) if grand else 0.0)
                 for t, time, count in type_rows]
        text = simple_table(["optype_name", "compute_time(ms, per-step)", "called_times(per-step)", "percent"], table)
        detail = []
        options = self.options
        for op_type, *_ in type_rows:
            if op_type in options.optypes_not_deal or (options.optypes_to_deal and op_type not in options.optypes_to_deal):
                continue
            for name, avg, _stream, _count, _type, subgraph, short in sorted(types[op_type], key=lambda o: -o[1]):
                if options.subgraph != "all" and subgraph != options.subgraph:
                    continue
                row = (short, op_type, avg, subgraph if subgraph in ("Default", "Gradients") else "")
                detail.append(row + ((name,) if options.show_op_path else ()))
        headers = ["op_name", "op_type", "avg_execution_time", "subgraph"] + (["full_op_name"] if options.show_op_path else [])
        text += "\n\nDetail:\n" + simple_table(headers, detail) + "\n"
        self._text(f"output_op_compute_time_detail_{self.device}.txt", _TITLE + "\n" + text)

    # ---- step trace --------------------------------------------------------------------------
    def _step_trace(self) -> None:
        first = self._report("step_trace_raw", "training, spans", per_capture=True)[:1]
        if not first:
            return
        legacy = self.options.style == "legacy"
        [(training, spans)] = first
        header = ["step_num", "start_point", "end_point", "total", "fp_point"]
        header += ["bp_point", "iteration_interval", "fp_and_bp", "tail"] if training else ["iteration_interval", "fp"]
        for span in spans or []:
            name = (f"stream_{span['stream_id']}_parallel_{span['pair']}" if legacy
                    else f"stream_{span['stream_id']}_{span['pair']}_{span['op_label']}")
            group = [f"{name}_start_point", f"{name}_end_point", name]  # MindInsight 0.3 order
            header += group if legacy else group[2:] + group[:2]  # later: duration, start, end
        params = self._params(per_capture=True, legacy=legacy)
        with open(self._path(f"step_trace_raw_{self.device}_detail_time.csv", per_capture=True), "wb") as handle:
            handle.write(_csv_line(header))
            write_text_column(self.con, query("ascend_step_trace_lines"), handle, params)
            sums = self.con.execute(query("ascend_step_trace_sums"), params).fetchall()
            average = [_round_half_even(int(total), count) for _, total, count in sums] or [0] * (len(header) - 1)
            handle.write(_csv_line(["-", *average]))

    def _point_info(self) -> None:
        points = self._report("step_trace_point_info", "fp_start, bp_end", per_capture=True)
        if not points:
            return
        fp, bp = points[0]
        info = {"fp_start": fp} if bp is None else {"fp_start": fp, "bp_end": bp}
        name = "step_trace_point_info.json" if self.options.style == "legacy" else \
            f"step_trace_point_info_{self.device}.json"
        self._text(name, json.dumps(info), per_capture=True)

    # ---- timeline ----------------------------------------------------------------------------
    def _timeline_display(self) -> None:
        legacy = self.options.style == "legacy"
        prefix = "timeline" if legacy else "ascend_timeline"
        with open(self._path(f"{prefix}_display_{self.device}.json"), "wb") as handle:
            handle.write(b"[")
            event = "legacy_event" if legacy else "event"
            events = write_text_column(self.con, self._report_sql("ascend_timeline_display", f"',' || {event}"),
                                       handle, self._params(), drop_leading=1)
            if not legacy:
                threads = set(self.con.execute("SELECT DISTINCT pid, tid FROM ascend_timeline_display WHERE rank = ?",
                                               [self.rank]).fetchall())
                metadata = ",".join(json.dumps(m) for m in self._timeline_metadata(threads))
                handle.write(((("," if events and metadata else "") + metadata).encode()))
            handle.write(b"]")
        columns = self.con.execute(self._report_sql("ascend_timeline_display", "lane, dur"), self._params()).fetchnumpy()
        tasks, aicpu = columns["lane"] == 0, columns["lane"] == 2
        # MindSpore adds the durations one by one in timeline order; cumsum adds in that order too
        durations = columns["dur"][tasks]
        total = float(np.cumsum(durations)[-1]) if durations.size else 0.0
        aicpu_count = int(aicpu.sum())
        streams, op_names = self.con.execute(query("ascend_timeline_summary"), self._params()).fetchall()[0]
        summary = {"total_time": total + float(columns["dur"][aicpu].sum()) / 1000,
                   "num_of_streams": streams + (1 if aicpu_count else 0),
                   "num_of_ops": op_names,
                   "op_exe_times": int(tasks.sum()) + aicpu_count}
        self._text(f"{prefix}_summary_{self.device}.json", json.dumps(summary))

    def _timeline_metadata(self, threads: set[tuple]) -> list[dict]:
        """Process and thread names of the (pid, tid) pairs the events use."""
        labels = {self.device: "AI Core Op", 10000: "Communication Op", 9000: "AI CPU Op"}
        # a task without a stream id (NULL tid) sorts last instead of failing the comparison
        used = sorted(threads, key=lambda u: (u[0], u[1] is None, u[1] or 0))
        meta = [{"name": "process_name", "ph": "M", "pid": pid, "args": {"name": labels[pid]}}
                for pid in sorted({p for p, _ in used})]
        meta += [{"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                  "args": {"name": f"Stream #{tid}" if pid != 9000 else "AI CPU"}} for pid, tid in used]
        return meta

    # ---- HCCL ---------------------------------------------------------------------------------
    def _hccl_raw(self) -> None:
        """hccl_raw_N.csv: per step the communication and wait cost and the per-link figures of
        its communication ops (summed over ops, in MindSpore's float arithmetic), per op the same; then
        the mean row '-'."""
        executions = self._report("hccl_raw", "step, op_label, communication_cost, wait_cost, link_info",
                                  per_capture=True)
        if not executions:
            return
        steps: dict[int, list] = {}  # step -> [cost, wait, links, {op_label: [cost, wait, links]}]
        for step, label, cost, wait, link_info in executions:
            op_links: dict[str, dict[str, list[float]]] = {}
            for unit in link_info or []:
                values = [unit["time_ms"], unit["size_kb"], unit["bandwidth"]]
                values += [unit["wait_ms"]] if unit["transport"] == "RDMA" else []
                op_links.setdefault(unit["link"], {})[unit["transport"]] = values
            row = steps.setdefault(step, [0.0, 0.0, {}, {}])
            row[0], row[1] = row[0] + cost, row[1] + wait
            _add_links(row[2], op_links)
            per_op = row[3].setdefault(label, [0.0, 0.0, {}])
            per_op[0], per_op[1] = per_op[0] + cost, per_op[1] + wait
            _add_links(per_op[2], op_links)
        lines = []
        for step, (cost, wait, step_links, ops) in steps.items():
            operators = {label: [str(step), c, w, op_links] for label, (c, w, op_links) in ops.items()}
            lines.append([step, cost, wait, json.dumps(step_links), json.dumps(operators)])
        rows = list(steps.values())
        per_op: dict[str, list] = {}
        for _, _, _, ops in rows:
            for label, values in ops.items():
                per_op.setdefault(label, []).append(values)
        cost, wait, mean_links = _mean_costs([(c, w, step_links) for c, w, step_links, _ in rows])
        operators = {label: ["-", *_mean_costs(values)] for label, values in per_op.items()}
        lines.append(["-", cost, wait, json.dumps(mean_links), json.dumps(operators)])
        with open(self._path(f"hccl_raw_{self.device}.csv", per_capture=True), "wb") as handle:
            handle.write(_csv_line(["step_num", "communication_cost", "wait_cost", "link_info",
                                    "communication_operator_cost"]))
            handle.writelines(_csv_line(line) for line in lines)

    # ---- AI CPU ------------------------------------------------------------------------------
    def _aicpu(self, rows: list[tuple]) -> None:
        total = sum(r[2] for r in rows)
        headers = ["serial_number", "node_type_name", "total_time(ms)", "dispatch_time(ms)", "run_start", "run_end"]
        if self.options.style == "legacy":
            lines = [" ".join(headers)] + [" ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in r)
                                           for r in rows]
            lines.append(f"AI CPU Total Time(ms): {total:f}")
            text = "\n".join(lines)
        else:
            text = simple_table(headers, [*rows, ("AI CPU Total Time(ms):", f"{total:f}", None, None, None, None)])
        self._text(f"output_data_preprocess_aicpu_{self.device}.txt", text + "\n")


def _add_links(total: dict[str, dict[str, list[float]]], links: dict[str, dict[str, list[float]]]) -> None:
    """Add per-link figures into `total` element by element (links new to it keep their order)."""
    for link, transports in links.items():
        for transport, values in transports.items():
            current = total.setdefault(link, {}).get(transport)
            total[link][transport] = list(values) if current is None else [a + b for a, b in zip(current, values)]


def _mean_costs(rows: list[tuple[float, float, dict]]) -> list:
    """[mean cost, mean wait, per-link element-wise means over the rows that have the link]."""
    cost = wait = 0.0
    sums: dict[str, dict[str, list[float]]] = {}
    counts: dict[tuple[str, str], int] = {}
    for row_cost, row_wait, links in rows:
        cost, wait = cost + row_cost, wait + row_wait
        _add_links(sums, links)
        for link, transports in links.items():
            for transport in transports:
                counts[link, transport] = counts.get((link, transport), 0) + 1
    means = {link: {transport: [v / counts[link, transport] for v in values] for transport, values in transports.items()}
             for link, transports in sums.items()}
    return [cost / len(rows), wait / len(rows), means]


def _round_half_even(total: int, count: int) -> int:
    """total / count rounded to the nearest integer, ties to even (MindSpore's Decimal average)."""
    quotient, remainder = divmod(int(total), count)
    if 2 * remainder > count or (2 * remainder == count and quotient % 2):
        quotient += 1
    return quotient


def _csv_line(values: list) -> bytes:
    """One CSV line as Python's csv module writes it (\r\n), encoded."""
    line = io.StringIO()
    csv.writer(line).writerow(values)
    return line.getvalue().encode("utf-8")
