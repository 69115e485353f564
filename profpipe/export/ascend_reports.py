"""MindSpore-compatible Ascend reports: the files MindSpore 0.5-1.x wrote from raw device data.

Per Ascend rank N (its device id): output_timeline_data_N.txt, output_op_compute_time_N.txt,
output_op_compute_time_detail_N.txt, aicore_intermediate_N_{detail,type}.csv,
framework_raw_N.csv, step_trace_raw_N_detail_time.csv, step_trace_point_info.json,
(ascend_)timeline_display_N.json with its summary, output_data_preprocess_aicpu_N.txt.
Op and task files cover all of a rank's profiling cycles together; the step-keyed files (step trace,
point info, hccl_raw) are written per cycle, a later cycle's with `_capture<c>` before the extension.

Numbers are computed the way MindSpore computes them, down to the float arithmetic (per-op
averages are a left-to-right sum of per-execution milliseconds, printed like Python prints
floats), so the files compare equal to MindSpore's. Where MindSpore versions disagree,
`ReportOptions.style` picks the behaviour (README, "Ascend reports"):

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

from ..options import ReportOptions
from .text_stream import write_text_column
from .text_table import simple_table

_TITLE = "====================op compute time===================="

#: One row per step of the step-trace CSV: its values in ticks, phases then the `span` values
#: of each communication span of the first step (zeros where a later step lacks that span).
_STEP_TRACE_ROWS_SQL = """
CREATE OR REPLACE TEMP TABLE step_trace_rows AS
WITH steps AS (
    SELECT step, round_even(start_ns / {tick}, 0)::BIGINT AS s, round_even(end_ns / {tick}, 0)::BIGINT AS e,
           round_even(fp_ns / {tick}, 0)::BIGINT AS f, round_even(bp_ns / {tick}, 0)::BIGINT AS b
    FROM int_step
    WHERE rank = $rank AND capture = $capture AND start_ns IS NOT NULL AND end_ns IS NOT NULL AND fp_ns IS NOT NULL
          {bp_filter}
), spans AS (
    SELECT stream_id, pair, row_number() OVER (ORDER BY stream_id, pair) AS col
    FROM step_communication WHERE rank = $rank AND capture = $capture AND step = {first_step}
), cells AS (
    SELECT t.step, p.col, coalesce(round_even(c.start_ns / {tick}, 0)::BIGINT, 0) AS cs,
           coalesce(round_even(c.end_ns / {tick}, 0)::BIGINT, 0) AS ce
    FROM steps t CROSS JOIN spans p
    LEFT JOIN step_communication c
           ON c.rank = $rank AND c.capture = $capture AND c.step = t.step AND c.stream_id = p.stream_id
          AND c.pair = p.pair
), comm AS (
    SELECT step, flatten(list({span} ORDER BY col)) AS vals FROM cells GROUP BY step
)
SELECT step, {phases} || coalesce(comm.vals, []::BIGINT[]) AS vals
FROM steps LEFT JOIN comm USING (step)
"""


def write_ascend_reports(con: duckdb.DuckDBPyConnection, reports_dir: Path, options: ReportOptions) -> list[Path]:
    """Write the compatible files of every Ascend rank; return their paths."""
    written: list[Path] = []
    # ranks read from device-counter data (raw dumps, MindSpore 1.x result folders); msprof
    # exports carry host-clock times and MindSpore 2.x reports of their own
    ranks = con.execute("SELECT rank, min(device_id), min(tick_hz) FROM run_info WHERE device_type = 'ascend' "
                        "AND tick_hz IS NOT NULL GROUP BY rank ORDER BY rank").fetchall()
    for rank, device, tick_hz in ranks:
        writer = _RankReports(con, reports_dir, rank, device, tick_hz, options)
        written += writer.write_all()
    return written


class _RankReports:
    def __init__(self, con: duckdb.DuckDBPyConnection, folder: Path, rank: int, device: int, tick_hz: int,
                 options: ReportOptions) -> None:
        self.con, self.folder, self.rank, self.device, self.options = con, folder, rank, device, options
        self.ns_per_tick = 1e9 / tick_hz
        self.capture = 0  # the profiling cycle the step-keyed files are written for (see write_all)
        self.written: list[Path] = []

    def write_all(self) -> list[Path]:
        self.folder.mkdir(parents=True, exist_ok=True)
        has_tasks = self._scalar("SELECT count(*) FROM device_op_stats WHERE rank = $rank") > 0
        if has_tasks:
            self._timeline_data()
            ops = self._per_op_ms()
            self._op_compute_time(ops)
            self._op_compute_time_detail(ops)
            self._aicore_intermediate(ops)
        if self._scalar("SELECT count(*) FROM task_desc WHERE rank = $rank") or \
                self._scalar("SELECT count(*) FROM op_desc WHERE rank = $rank"):
            self._framework_raw()
        if has_tasks or self._scalar("SELECT count(*) FROM aicpu_exec WHERE rank = $rank"):
            self._timeline_display()
        if self._scalar("SELECT count(*) FROM aicpu_exec WHERE rank = $rank"):
            self._aicpu()
        # step-keyed files, once per profiling cycle of the rank: a later cycle's files carry _capture<c>
        for (self.capture,) in self._rows("SELECT DISTINCT capture FROM int_step WHERE rank = $rank ORDER BY 1"):
            if self._scalar("SELECT count(*) FROM int_step WHERE rank = $rank AND capture = $capture "
                            "AND end_ns IS NOT NULL"):
                self._step_trace()
                self._point_info()
            if self._scalar("SELECT count(*) FROM comm_op_stats WHERE rank = $rank AND capture = $capture "
                            "AND step IS NOT NULL"):
                self._hccl_raw()
        return self.written

    # ---- helpers ---------------------------------------------------------------------------
    def _sql(self, sql: str) -> str:
        return sql.replace("$rank", str(int(self.rank))).replace("$capture", str(int(self.capture)))

    def _rows(self, sql: str) -> list[tuple]:
        return self.con.execute(self._sql(sql)).fetchall()

    def _scalar(self, sql: str) -> object:
        return self._rows(sql)[0][0]

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

    def _csv(self, name: str, header: list[str], rows: list[tuple]) -> None:
        with open(self._path(name), "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)  # MindSpore wrote CSV with the csv module's \r\n lines
            writer.writerow(header)
            writer.writerows(rows)

    # ---- op timing -------------------------------------------------------------------------
    def _timeline_data(self) -> None:
        with open(self._path(f"output_timeline_data_{self.device}.txt"), "wb") as handle:
            handle.write(b"op_name, stream_id, start_time(ms), duration(ms)\n")
            write_text_column(self.con, self._sql("""
                SELECT op_name || ',' || stream_id || ',' || (start_ns / 1e6)::VARCHAR || ','
                       || (dur_ns / 1e6)::VARCHAR || chr(10)
                FROM int_device_exec WHERE rank = $rank AND kind = 'task'
                ORDER BY start_ns, stream_id, task_id"""), handle)

    def _per_op_ms(self) -> list[tuple]:
        """(op_name, avg ms as MindSpore sums it, stream, executions, op_type, subgraph), first-seen order."""
        return self._rows("""
            SELECT s.op_name,
                   list_reduce(list(e.dur_ns / 1e6 ORDER BY e.start_ns, e.task_id), lambda a, b: a + b)
                       / any_value(s.executions) AS avg_ms,
                   any_value(s.stream_id), any_value(s.executions), any_value(s.op_type),
                   any_value(s.subgraph), any_value(s.short_name), any_value(s.first_start_ns) AS first_start
            FROM device_op_stats s
            JOIN int_device_exec e ON e.rank = s.rank AND e.op_name = s.op_name AND e.kind = 'task'
            WHERE s.rank = $rank
            GROUP BY s.op_name ORDER BY first_start, s.op_name""")

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
            for name, avg, _stream, _count, _type, subgraph, short, _ in sorted(types[op_type], key=lambda o: -o[1]):
                if options.subgraph != "all" and subgraph != options.subgraph:
                    continue
                row = (short, op_type, avg, subgraph if subgraph in ("Default", "Gradients") else "")
                detail.append(row + ((name,) if options.show_op_path else ()))
        headers = ["op_name", "op_type", "avg_execution_time", "subgraph"] + (["full_op_name"] if options.show_op_path else [])
        text += "\n\nDetail:\n" + simple_table(headers, detail) + "\n"
        self._text(f"output_op_compute_time_detail_{self.device}.txt", _TITLE + "\n" + text)

    def _aicore_intermediate(self, ops: list[tuple]) -> None:
        if self.options.style == "legacy":
            self._csv(f"aicore_intermediate_{self.device}_detail.csv", ["full_op_time", "execution_time"],
                      [(name, avg) for name, avg, *_ in ops])
            rows = self._rows("""SELECT op_type, round(per_step_ns / 1e6, 6), instances, round(per_step_share * 100, 2)
                                 FROM device_op_type_stats WHERE rank = $rank ORDER BY per_step_ns DESC, op_type""")
            self._csv(f"aicore_intermediate_{self.device}_type.csv",
                      ["op_type", "execution_time", "execution_frequency", "percent"], rows)
            return
        types = dict(self._rows("SELECT op_name, any_value(task_type) FROM task_desc WHERE rank = $rank GROUP BY op_name"))
        self._csv(f"aicore_intermediate_{self.device}_detail.csv",
                  ["full_op_name", "task_duration", "execution_frequency", "task_type"],
                  [(name, avg, count, types.get(name) or "AI_CORE") for name, avg, _s, count, *_ in ops])
        rows = self._rows("""SELECT op_type, total_ns / 1e6, executions, share
                             FROM device_op_type_stats WHERE rank = $rank ORDER BY total_ns DESC, op_type""")
        self._csv(f"aicore_intermediate_{self.device}_type.csv",
                  ["op_type", "total_time", "execution_frequency", "percent"], rows)

    # ---- framework ---------------------------------------------------------------------------
    def _framework_raw(self) -> None:
        rows = self._rows("""
            WITH joined AS (
                SELECT coalesce(t.op_name, o.op_name) AS full_name, t.task_id, t.stream_id, t.block_dim, t.graph_id,
                       coalesce(o.op_type, t.op_type) AS op_type, o.tensors_json,
                       coalesce(t.seq, 1e12 + o.seq) AS ordering
                FROM (SELECT * FROM task_desc WHERE rank = $rank) t
                FULL JOIN (SELECT * FROM op_desc WHERE rank = $rank) o ON o.op_name = t.op_name
            )
            SELECT task_id, stream_id, block_dim, full_name, op_short_name(full_name),
                   op_type, CASE WHEN op_subgraph(full_name) IN ('Default', 'Gradients')
                                 THEN op_subgraph(full_name) ELSE '' END,
                   tensors_json, graph_id
            FROM joined ORDER BY ordering""")
        if self.options.style == "legacy":
            header = ["task_id", "stream_id", "block_dim", "full_op_name", "op_name", "op_type", "subgraph", "op_info"]
            body = [(t, s, b, full, short, typ or "", sub, info or "") for t, s, b, full, short, typ, sub, info, _ in rows]
        else:
            header = ["task_id", "stream_id", "block_dim", "full_kernel_name", "op_name", "kernel_name",
                      "kernel_type", "subgraph", "op_info"]
            with_graph = any(r[8] is not None for r in rows)
            header += ["graph_id"] if with_graph else []
            body = [(t, s, b, full, full, short, typ or "", sub, info or "") + ((g,) if with_graph else ())
                    for t, s, b, full, short, typ, sub, info, g in rows]
        self._csv(f"framework_raw_{self.device}.csv", header, body)

    # ---- step trace --------------------------------------------------------------------------
    def _step_trace(self) -> None:
        legacy = self.options.style == "legacy"
        training = self._scalar("""SELECT count(bp_ns) > 0 FROM int_step WHERE rank = $rank AND capture = $capture
                                   AND start_ns IS NOT NULL AND end_ns IS NOT NULL AND fp_ns IS NOT NULL""")
        first_step = self._scalar("""SELECT min(step) FROM int_step WHERE rank = $rank AND capture = $capture
                                     AND start_ns IS NOT NULL
                                     AND end_ns IS NOT NULL AND fp_ns IS NOT NULL"""
                                  + (" AND bp_ns IS NOT NULL" if training else ""))
        if first_step is None:
            return
        spans = self._rows(f"""SELECT stream_id, pair, op_label FROM step_communication
                               WHERE rank = $rank AND capture = $capture AND step = {first_step}
                               ORDER BY stream_id, pair""")
        header = ["step_num", "start_point", "end_point", "total", "fp_point"]
        header += ["bp_point", "iteration_interval", "fp_and_bp", "tail"] if training else ["iteration_interval", "fp"]
        for sid, k, label in spans:
            name = f"stream_{sid}_parallel_{k}" if legacy else f"stream_{sid}_{k}_{label}"
            group = [f"{name}_start_point", f"{name}_end_point", name]  # MindInsight 0.3 order
            header += group if legacy else group[2:] + group[:2]  # later: duration, start, end
        self.con.execute(self._sql(_STEP_TRACE_ROWS_SQL.format(
            tick=self.ns_per_tick, first_step=first_step, bp_filter="AND bp_ns IS NOT NULL" if training else "",
            phases="[s, e, e - s, f, b, f - s, b - f, e - b]" if training else "[s, e, e - s, f, f - s, e - f]",
            span="[cs, ce, ce - cs]" if legacy else "[ce - cs, cs, ce]")))
        columns = len(header) - 1
        count, *sums = self._rows(f"""
            SELECT count(*), {", ".join(f"sum(vals[{i}])" for i in range(1, columns + 1))} FROM step_trace_rows
            WHERE step > {first_step if legacy else first_step - 1}""")[0]
        average = [_round_half_even(total, count) for total in sums] if count else [0] * columns
        with open(self._path(f"step_trace_raw_{self.device}_detail_time.csv", per_capture=True), "wb") as handle:
            handle.write(_csv_line(header))
            write_text_column(self.con, """SELECT step || ',' || array_to_string(vals, ',') || chr(13) || chr(10)
                                           FROM step_trace_rows ORDER BY step""", handle)
            handle.write(_csv_line(["-", *average]))
        self.con.execute("DROP TABLE step_trace_rows")

    def _point_info(self) -> None:
        fp, bp = self._rows("""SELECT arg_min(fp_op, step), arg_min(bp_op, step) FROM int_step
                               WHERE rank = $rank AND capture = $capture AND fp_op IS NOT NULL""")[0]
        if fp is None:
            return
        info = {"fp_start": fp} if bp is None else {"fp_start": fp, "bp_end": bp}
        name = "step_trace_point_info.json" if self.options.style == "legacy" else \
            f"step_trace_point_info_{self.device}.json"
        self._text(name, json.dumps(info), per_capture=True)

    # ---- timeline ----------------------------------------------------------------------------
    def _timeline_display(self) -> None:
        tick = self.ns_per_tick
        legacy = self.options.style == "legacy"
        comm_name = ("'stream_' || stream_id || '_parallel_' || pair" if legacy
                     else "'stream_' || stream_id || '_' || pair || '_' || op_label")
        # Per op, its short name and the JSON args MindSpore adds (type, fullname, tensors), looked
        # up by index while the sorted events stream out, so the sort carries no long strings.
        self.con.execute(self._sql("""CREATE OR REPLACE TEMP TABLE ascend_timeline_ops AS
            SELECT row_number() OVER (ORDER BY s.op_name) AS op_index, s.op_name, s.short_name,
                   CASE WHEN s.op_type IS NOT NULL THEN
                       ',"args":' || left(to_json({'type': s.op_type, 'fullname': s.op_name}), -1)
                       || coalesce(',' || nullif(o.tensors_json[2:-2], ''), '') || '}}' END AS args
            FROM device_op_stats s LEFT JOIN op_desc o ON o.rank = s.rank AND o.op_name = s.op_name
            WHERE s.rank = $rank"""))
        self.con.execute("""SET VARIABLE ascend_op_names = (SELECT coalesce(list(short_name ORDER BY op_index), [])
                                                            FROM ascend_timeline_ops)""")
        self.con.execute("""SET VARIABLE ascend_op_args = (SELECT coalesce(list(args ORDER BY op_index), [])
                                                           FROM ascend_timeline_ops)""")
        self.con.execute(self._sql(f"""CREATE OR REPLACE TEMP TABLE ascend_timeline_events AS
            WITH tasks AS (
                SELECT e.start_ns, e.dur_ns, e.stream_id, p.op_index
                FROM int_device_exec e JOIN ascend_timeline_ops p ON p.op_name = e.op_name
                WHERE e.rank = $rank AND e.kind = 'task'
            ), origin AS (
                SELECT least((SELECT min(start_ns) FROM tasks) / 1e6,
                             (SELECT min(run_start_ns) // 1000 FROM aicpu_exec WHERE rank = $rank) / 1e3) AS min_ms
            )
            SELECT 0 AS lane, op_index, NULL::VARCHAR AS name, stream_id AS tid,
                   (start_ns / 1e6 - min_ms) * 1000 AS ts, dur_ns / 1e6 * 1000 AS dur
            FROM tasks, origin
            UNION ALL
            SELECT 1, NULL, {comm_name}, stream_id,
                   (round(start_ns / {tick}) / 1e5 - min_ms) * 1000, round(dur_ns / {tick}) / 1e5 * 1000
            FROM step_communication, origin WHERE rank = $rank
            UNION ALL
            SELECT 2, NULL, op_type, 0, (run_start_ns // 1000 / 1e3 - min_ms) * 1000,
                   ((run_end_ns - run_start_ns) // 1000)::DOUBLE
            FROM aicpu_exec, origin WHERE rank = $rank"""))
        prefix = "timeline" if legacy else "ascend_timeline"
        with open(self._path(f"{prefix}_display_{self.device}.json"), "wb") as handle:
            handle.write(b"[")
            events = write_text_column(self.con, f"""
                SELECT ',' || CASE WHEN args IS NULL THEN plain ELSE left(plain, -1) || args END
                FROM (SELECT to_json({{'name': coalesce(name, getvariable('ascend_op_names')[op_index]), 'ph': 'X',
                                       'tid': tid, 'ts': ts, 'dur': dur,
                                       'pid': CASE lane WHEN 0 THEN {int(self.device)} WHEN 1 THEN 10000
                                                        ELSE 9000 END}}) AS plain,
                             getvariable('ascend_op_args')[op_index] AS args
                      FROM (SELECT * FROM ascend_timeline_events ORDER BY ts, lane))""", handle, drop_leading=1)
            if not legacy:
                threads = self._rows("SELECT DISTINCT lane, tid FROM ascend_timeline_events")
                metadata = ",".join(json.dumps(m) for m in self._timeline_metadata(threads))
                handle.write(((("," if events and metadata else "") + metadata).encode()))
            handle.write(b"]")
        streams, ops, aicpu_ms, aicpu_types, aicpu_count = self._rows("""
            SELECT count(DISTINCT tid) FILTER (WHERE lane = 0), count(*) FILTER (WHERE lane = 0),
                   coalesce(sum(dur) FILTER (WHERE lane = 2), 0) / 1000,
                   count(DISTINCT name) FILTER (WHERE lane = 2), count(*) FILTER (WHERE lane = 2)
            FROM ascend_timeline_events""")[0]
        # MindSpore adds the durations one by one in timeline order; cumsum adds in that order too
        durations = self.con.sql("SELECT dur FROM ascend_timeline_events WHERE lane = 0 ORDER BY ts").fetchnumpy()["dur"]
        total = float(np.cumsum(durations)[-1]) if durations.size else 0.0
        summary = {"total_time": total + aicpu_ms,
                   "num_of_streams": streams + (1 if aicpu_count else 0),
                   "num_of_ops": self._scalar("SELECT count(*) FROM device_op_stats WHERE rank = $rank") + aicpu_types,
                   "op_exe_times": ops + aicpu_count}
        self._text(f"{prefix}_summary_{self.device}.json", json.dumps(summary))

    def _timeline_metadata(self, threads: list[tuple]) -> list[dict]:
        labels = {self.device: "AI Core Op", 10000: "Communication Op", 9000: "AI CPU Op"}
        pids = {0: self.device, 1: 10000, 2: 9000}
        # a task without a stream id (NULL tid) sorts last instead of failing the comparison
        used = sorted({(pids[lane], tid) for lane, tid in threads}, key=lambda u: (u[0], u[1] is None, u[1] or 0))
        meta = [{"name": "process_name", "ph": "M", "pid": pid, "args": {"name": labels[pid]}}
                for pid in sorted({p for p, _ in used})]
        meta += [{"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                  "args": {"name": f"Stream #{tid}" if pid != 9000 else "AI CPU"}} for pid, tid in used]
        return meta

    # ---- HCCL ---------------------------------------------------------------------------------
    def _hccl_raw(self) -> None:
        """hccl_raw_N.csv: per step the communication and wait cost and the per-link figures of
        its communication ops (summed over ops), per op the same; then the mean row '-'."""
        # MindSpore's float arithmetic, so that the file compares equal to its own: each link unit's
        # time in µs (an RDMA triple: its three tasks' µs added), summed one by one in task order, / 1000;
        # the marts hold the same figures as exact integer ns.
        self.con.execute(self._sql("""CREATE OR REPLACE TEMP TABLE hccl_raw_links AS
            SELECT capture, op_name, iteration, link, transport, min(seq) AS first_seq,
                   list_reduce(list(time_us ORDER BY seq), lambda a, b: a + b) / 1000 AS time_ms,
                   list_reduce(list(time_us ORDER BY seq) FILTER (WHERE main_plane), lambda a, b: a + b) / 1000
                       AS main_time_ms,
                   sum(bytes)::BIGINT / 1e3 AS size_kb,
                   list_reduce(list(wait_us ORDER BY seq), lambda a, b: a + b) / 1000 AS wait_ms,
                   list_reduce(list(wait_us ORDER BY seq) FILTER (WHERE main_plane), lambda a, b: a + b) / 1000
                       AS main_wait_ms
            FROM (SELECT *, CASE WHEN transport = 'RDMA' THEN first_ns / 1000 + second_send_ns / 1000 + wait_ns / 1000
                                 ELSE dur_ns / 1000 END AS time_us, wait_ns / 1000 AS wait_us
                  FROM comm_link_task WHERE rank = $rank AND capture = $capture)
            GROUP BY capture, step, op_label, op_name, iteration, link, transport"""))
        executions = self._rows("""
            WITH waits AS (
                SELECT capture, op_name, iteration,
                       list_reduce(list(dur_ns / 1000 ORDER BY seq) FILTER (WHERE main_plane AND task_type = 'Notify Wait'),
                                   lambda a, b: a + b) / 1000 AS notify_wait_ms
                FROM int_comm_task WHERE rank = $rank AND capture = $capture GROUP BY capture, op_name, iteration
            ), costs AS (
                SELECT capture, op_name, iteration,
                       list_reduce(list(main_time_ms ORDER BY first_seq) FILTER (WHERE main_time_ms IS NOT NULL),
                                   lambda a, b: a + b) AS cost_ms,
                       list_reduce(list(main_wait_ms ORDER BY first_seq) FILTER (WHERE main_wait_ms IS NOT NULL),
                                   lambda a, b: a + b) AS rdma_wait_ms
                FROM hccl_raw_links GROUP BY capture, op_name, iteration
            )
            SELECT o.step, o.op_label, coalesce(c.cost_ms, 0.0),
                   CASE WHEN c.rdma_wait_ms IS NULL THEN coalesce(w.notify_wait_ms, 0.0)
                        ELSE coalesce(w.notify_wait_ms, 0.0) - c.rdma_wait_ms END,
                   o.op_name, o.iteration
            FROM comm_op_stats o LEFT JOIN waits w USING (capture, op_name, iteration)
            LEFT JOIN costs c USING (capture, op_name, iteration)
            WHERE o.rank = $rank AND o.capture = $capture AND o.step IS NOT NULL
            ORDER BY o.step, o.start_ns, o.op_name, o.iteration""")
        links: dict[tuple[str, int], dict[str, dict[str, list[float]]]] = {}
        for op_name, iteration, link, transport, time_ms, size_kb, bandwidth, wait_ms in self._rows("""
                SELECT op_name, iteration, link, transport, time_ms, size_kb, size_kb / (time_ms / 1e3), wait_ms
                FROM hccl_raw_links ORDER BY op_name, iteration, first_seq"""):
            values = [time_ms, size_kb, bandwidth] + ([wait_ms] if transport == "RDMA" else [])
            links.setdefault((op_name, iteration), {}).setdefault(link, {})[transport] = values
        steps: dict[int, list] = {}  # step -> [cost, wait, links, {op_label: [cost, wait, links]}]
        for step, label, cost, wait, op_name, iteration in executions:
            op_links = links.get((op_name, iteration), {})
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
    def _aicpu(self) -> None:
        rows = self._rows("""SELECT seq + 1, op_type, total_ns // 1000 / 1e3, dispatch_ns // 1000 / 1e3,
                                    run_start_ns // 1000, run_end_ns // 1000
                             FROM aicpu_exec WHERE rank = $rank ORDER BY seq""")
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
