"""Your first hour with profpipe, as a script you can run and read top to bottom.

    python examples/first_hour.py                 # writes into a new temporary folder (printed at the end)
    python examples/first_hour.py --out ./tour    # or into a folder of your choice

It walks through what most people do with profpipe on day one:

  1. analyse a profiler dump with the Python API (`offline_analyse`), here a small PyTorch (Kineto) trace that
     ships with profpipe's test fixtures: two training steps of a tiny model on one GPU;
  2. look at what came out: the output folder and its profile.duckdb, a DuckDB database of tables;
  3. ask it a question in SQL with duckdb, from the raw "normalized" tables, and check the answer against the
     ready-made "mart" that profpipe computed for the same question;
  4. draw a chart from a mart (a self-contained SVG file: no plotting library needed);
  5. profile a "second run" (here: the same trace with one kernel made 2.5x slower, as a regression would),
     analyse it too, and diff the two runs to find what changed.

Everything is written under the output folder; nothing is written into the repository or into the input.
The script only needs profpipe and its own dependencies (duckdb, pyarrow).
"""
from __future__ import annotations

import argparse
import csv
import html
import json
import sys
import tempfile
from pathlib import Path

import duckdb

# `offline_analyse` is profpipe's Python API, shaped like MindSpore's Profiler.offline_analyse; `diff_runs` is
# what `profpipe diff` runs: it compares two analysed runs.
from profpipe import offline_analyse
from profpipe.diff import diff_runs
from profpipe.report import write_diff_report

#: The trace we start from: one rank of a PyTorch profiler run (`torch.profiler` with a CUDA device), as
#: tensorboard_trace_handler writes it. Any folder a profiler saved works the same way (MindSpore, msprof...).
REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "fixtures" / "kineto" / "current" / "rank-0.pt.trace.json"

#: The kernel our "second run" makes slower, and by how much.
SLOWER_KERNEL = "void at::native::vectorized_elementwise_kernel"
SLOWDOWN = 2.5


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None,
                        help="folder to write into (default: a new temporary folder)")
    args = parser.parse_args(argv)
    out = (args.out or Path(tempfile.mkdtemp(prefix="profpipe-first-hour-"))).resolve()
    out.mkdir(parents=True, exist_ok=True)

    # ------------------------------------------------------------------------------------------------------
    # 1. Analyse a dump.
    #
    # offline_analyse(path, output_path=...) reads every source under `path` (a folder, or one trace file that
    # stands alone, as here), builds the tables and the SQL models, and writes the output folder. It never writes
    # into `path`. The command line does the same: `profpipe analyse PATH -o OUTPUT`.
    # ------------------------------------------------------------------------------------------------------
    section("1. analyse the first run")
    run_a = out / "run_a"
    result = offline_analyse(FIXTURE, output_path=run_a, force=True)
    # exit_code 0: everything was read whole; 3: something was dropped or repaired (see result.health and the
    # trace_health table); the run still has an output then.
    print(f"analysed {FIXTURE.name} into {run_a} (exit code {result.exit_code}, ranks {result.ranks})")

    # ------------------------------------------------------------------------------------------------------
    # 2. What came out.
    #
    # The output folder holds profile.duckdb (every table), report.html (the visual report: open it in a
    # browser), reports/ (MindSpore-compatible files), timeline/ (a Chrome/Perfetto trace), findings.json (the
    # advisor's findings: `profpipe advise OUT`) and manifest.json (what was read, and how long it took).
    # `profpipe tables OUT` lists the tables; `profpipe describe TABLE` documents each column and its unit.
    # ------------------------------------------------------------------------------------------------------
    section("2. the output folder")
    for path in sorted(p for p in run_a.iterdir() if not p.name.startswith(".")):
        print(f"  {path.name}{'/' if path.is_dir() else ''}")
    # Open the database read-only: several readers may share it, and nothing can change it by accident.
    con_a = duckdb.connect(str(run_a / "profile.duckdb"), read_only=True)
    print(f"steps in the run: {con_a.execute('SELECT count(*) FROM step_phases').fetchone()[0]}")

    # ------------------------------------------------------------------------------------------------------
    # 3. SQL over the result.
    #
    # Two kinds of tables: the normalized tables (one row per event: device_exec is one kernel, memcpy or
    # memset execution, host_op one framework op call...) and the marts, the models computed from them
    # (kernel_stats: one row per kernel name and stream, with counts and times). Times are integers in ns.
    #
    # Here we compute per-kernel totals ourselves from device_exec, then check them against kernel_stats:
    # the same question, answered twice, must give the same numbers.
    # ------------------------------------------------------------------------------------------------------
    section("3. SQL: kernel time from the raw table, checked against the mart")
    ours = con_a.execute("""
        SELECT rank, name, stream_id, count(*) AS instances, sum(dur_ns) AS total_ns
        FROM device_exec
        WHERE kind = 'kernel'
        GROUP BY ALL
        ORDER BY total_ns DESC, name
    """).fetchall()
    mart = con_a.execute("""
        SELECT rank, name, stream_id, instances, total_ns
        FROM kernel_stats
        ORDER BY total_ns DESC, name
    """).fetchall()
    columns = ["rank", "name", "stream_id", "instances", "total_ns"]
    write_csv(out / "kernel_time_sql.csv", columns, ours)
    write_csv(out / "kernel_time_mart.csv", columns, mart)
    for row in ours:
        print(f"  {row[1][:50]:50}  {row[3]:3} runs  {row[4] / 1e6:8.3f} ms")
    print("SQL and mart agree" if ours == mart else "SQL and mart DIFFER")

    # ------------------------------------------------------------------------------------------------------
    # 4. A chart from a mart.
    #
    # op_type_stats has one row per op type of a rank and side (Host: framework ops; Device: kernels) with
    # its executions and time. We draw the host side's time per op type as bars. ProfilerStep#N rows are the
    # step ranges themselves (they contain every other op), so we leave them out.
    # ------------------------------------------------------------------------------------------------------
    section("4. a chart: host time per op type (op_type_stats)")
    bars = con_a.execute("""
        SELECT op_type, total_ns
        FROM op_type_stats
        WHERE side = 'Host' AND op_type NOT LIKE 'ProfilerStep#%'
        ORDER BY total_ns DESC, op_type
        LIMIT 10
    """).fetchall()
    print(text_chart(bars))
    chart = out / "op_type_time.svg"
    chart.write_text(svg_bar_chart(bars, "Host time per op type (ms), run A"))
    print(f"wrote {chart}")

    # ------------------------------------------------------------------------------------------------------
    # 5. A second run, and what changed.
    #
    # In real life run B is your code after a change (a new version, another batch size...). Here we make one
    # from the same trace by making one kernel 2.5x slower, and analyse it like the first.
    # diff_runs compares the two per kernel, op type and step phase: counts, time per step, and Welch's t test
    # over the steps; `significant` marks changes beyond noise. `profpipe diff run_a run_b` prints the same.
    # ------------------------------------------------------------------------------------------------------
    section("5. a second run, and the diff")
    slower = out / "inputs" / "slower.pt.trace.json"
    slower.parent.mkdir(exist_ok=True)
    slow_down_kernel(FIXTURE, slower, SLOWER_KERNEL, SLOWDOWN)
    run_b = out / "run_b"
    result_b = offline_analyse(slower, output_path=run_b, force=True)
    print(f"analysed {slower.name} into {run_b} (exit code {result_b.exit_code})")
    con_b = duckdb.connect(str(run_b / "profile.duckdb"), read_only=True)
    changes = diff_runs(con_a, con_b)  # a pyarrow table, ranked by the change of the time per step
    rows = changes.to_pylist()
    write_csv(out / "diff.csv", changes.column_names, [list(r.values()) for r in rows])
    write_diff_report(changes, "run_a", "run_b", out / "diff.html")  # what `profpipe diff --report` writes
    # A kernel row names the kernel; kernel_stats says which framework op launched it most often.
    launched_by = dict(con_b.execute("SELECT name, op_name FROM kernel_stats").fetchall())
    significant = [r for r in rows if r["significant"]]
    for row in significant:
        op = launched_by.get(row["key"]) if row["kind"] == "kernel" else None
        op = f" (launched by {op})" if op else ""
        print(f"  {row['kind']:10} {row['key'][:50]:50} {row['per_step_change_ns'] / 1e3:+9.1f} us/step "
              f"p = {row['p_value']:.3g}{op}")

    # A summary of what the tour wrote, for you (and for the test that runs this script).
    summary = {"out": str(out), "run_a": str(run_a), "run_b": str(run_b),
               "exit_codes": [result.exit_code, result_b.exit_code],
               "kernel_time_sql": [dict(zip(columns, r)) for r in ours],
               "kernel_time_mart": [dict(zip(columns, r)) for r in mart],
               "chart": str(chart), "chart_bars": [{"op_type": k, "total_ns": v} for k, v in bars],
               "significant_changes": [{"kind": r["kind"], "key": r["key"], "launched_by": launched_by.get(r["key"]),
                                        "per_step_change_ns": r["per_step_change_ns"]} for r in significant]}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    section("done")
    print(f"everything is in {out}: open run_a/report.html and diff.html in a browser")
    return 0 if ours == mart else 1


def slow_down_kernel(source: Path, target: Path, kernel: str, factor: float) -> None:
    """Copy a Kineto trace, with every execution of `kernel` lasting `factor` times longer (its start kept).

    A Kineto trace is a JSON object whose traceEvents are Chrome trace events: "X" events have a start (ts) and
    a duration (dur) in microseconds; kernels have cat "kernel"."""
    trace = json.loads(source.read_text())
    for event in trace["traceEvents"]:
        if event.get("cat") == "kernel" and event.get("name") == kernel:
            event["dur"] = event["dur"] * factor
    target.write_text(json.dumps(trace))


def text_chart(bars: list[tuple[str, int]], width: int = 40) -> str:
    """Bars of '#' in the terminal, longest = `width`."""
    top = max((v for _, v in bars), default=0) or 1
    return "\n".join(f"  {name[:45]:45} {'#' * max(1, round(width * value / top)):{width}} {value / 1e6:.3f} ms"
                     for name, value in bars)


def svg_bar_chart(bars: list[tuple[str, int]], title: str) -> str:
    """A horizontal bar chart as a self-contained SVG document (any browser opens it)."""
    label_w, bar_w, row_h, top_pad = 380, 300, 24, 40
    top = max((v for _, v in bars), default=0) or 1
    height = top_pad + row_h * len(bars) + 10
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 90}" height="{height}" '
             'font-family="sans-serif" font-size="12">',
             f'<text x="10" y="22" font-size="15" font-weight="bold">{html.escape(title)}</text>']
    for i, (name, value) in enumerate(bars):
        y = top_pad + i * row_h
        length = max(1.0, bar_w * value / top)
        parts += [f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end">{html.escape(name[:60])}</text>',
                  f'<rect x="{label_w}" y="{y + 3}" width="{length:.1f}" height="{row_h - 6}" fill="#4878a8">'
                  f'<title>{html.escape(name)}: {value} ns</title></rect>',
                  f'<text x="{label_w + length + 6:.1f}" y="{y + 15}">{value / 1e6:.3f}</text>']
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def write_csv(path: Path, columns: list[str], rows: list) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        writer.writerows(rows)


def section(title: str) -> None:
    print(f"\n== {title}")


# Analyses of inputs with many sources read them in worker processes, which import this script again: the
# work must start only when the script is run, not when it is imported (Python's multiprocessing rule).
if __name__ == "__main__":
    sys.exit(main())
