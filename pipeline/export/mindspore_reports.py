"""MindSpore-compatible reports: the CSV files MindSpore's CPU/GPU profiler writes, from our marts.

File names and columns are MindSpore's (cpu_op_type_info_N.csv, cpu_op_detail_info_N.csv,
gpu_op_type_info_N.csv, gpu_op_detail_info_N.csv, gpu_activity_data_N.csv), numbers are
printed like C++ streams do (6 significant digits), so tools that read MindSpore's files
keep working. Differences from MindSpore, on purpose: rows are sorted by time (MindSpore
writes hash-map order), `subgraph` holds the real first scope element (MindSpore writes
`Default` for every op), and sums are exact (MindSpore accumulates in float32).
"""
from __future__ import annotations

import csv
from pathlib import Path

import duckdb

_G = "printf('%.6g', {})"

_REPORTS: dict[str, str] = {
    # file prefix: SELECT producing the columns in MindSpore's order
    "cpu_op_type_info": f"""
        SELECT op_type, occurrences AS type_occurrences,
               executions_per_step AS "execution_frequency(per-step)",
               {_G.format('total_ns / 1e6')} AS total_compute_time,
               {_G.format('total_ns / 1e6 / occurrences')} AS "avg_time(ms)",
               {_G.format('share')} AS percent
        FROM op_type_stats WHERE rank = $rank AND side = 'Host'
        ORDER BY total_ns DESC, op_type""",
    "cpu_op_detail_info": f"""
        SELECT 'Host' AS op_side, d.op_type, d.short_name AS op_name, d.op_name AS full_op_name,
               d.occurrences AS op_occurrences,
               {_G.format('d.total_ns / 1e6')} AS "op_total_time(ms)",
               {_G.format('d.total_ns / 1e6 / d.occurrences')} AS "op_avg_time(ms)",
               {_G.format('d.share')} AS total_proportion,
               d.subgraph, r.pid
        FROM op_detail_stats d JOIN run_info r USING (rank)
        WHERE d.rank = $rank AND d.side = 'Host'
        ORDER BY d.total_ns DESC, d.op_name""",
    "gpu_op_type_info": f"""
        SELECT op_type, occurrences AS type_occurrences,
               {_G.format('total_ns / 1e3')} AS "total_time(us)",
               {_G.format('share')} AS total_proportion,
               {_G.format('total_ns / 1e3 / occurrences')} AS "avg_time(us)"
        FROM op_type_stats WHERE rank = $rank AND side = 'Device'
        ORDER BY total_ns DESC, op_type""",
    "gpu_op_detail_info": f"""
        SELECT 'Device' AS op_side, op_type, short_name AS op_name, op_name AS op_full_name,
               occurrences AS op_occurrences,
               {_G.format('total_ns / 1e3')} AS "op_total_time(us)",
               {_G.format('total_ns / 1e3 / occurrences')} AS "op_avg_time(us)",
               {_G.format('share')} AS total_proportion,
               {_G.format('device_exec_total_ns / 1e3')} AS "cuda_activity_cost_time(us)",
               device_exec_count AS cuda_activity_call_count
        FROM op_detail_stats WHERE rank = $rank AND side = 'Device'
        ORDER BY total_ns DESC, op_name""",
    "gpu_activity_data": f"""
        WITH per_name AS (
            SELECT name,
                   arg_min(op_name, start_ns) AS first_op, arg_min(stream_id, start_ns) AS first_stream,
                   count(*) AS occurrences, sum(dur_ns) AS total_ns, max(dur_ns) AS max_ns, min(dur_ns) AS min_ns
            FROM int_device_exec WHERE rank = $rank AND kind = 'kernel' GROUP BY name
        )
        SELECT p.name, coalesce(m.launch_api, 'cuLaunchKernel') AS type,
               coalesce(m.op_name, p.first_op) AS op_full_name,
               coalesce(m.stream_id, p.first_stream) AS stream_id,
               m.block_dim, m.grid_dim, p.occurrences,
               {_G.format('p.total_ns / 1e3')} AS "total_duration(us)",
               {_G.format('p.total_ns / 1e3 / p.occurrences')} AS "avg_duration(us)",
               {_G.format('p.max_ns / 1e3')} AS "max_duration(us)",
               {_G.format('p.min_ns / 1e3')} AS "min_duration(us)"
        FROM per_name p LEFT JOIN kernel_meta m ON m.rank = $rank AND m.name = p.name
        ORDER BY p.total_ns DESC, p.name""",
}


def write_reports(con: duckdb.DuckDBPyConnection, reports_dir: Path) -> list[Path]:
    """Write every MindSpore-compatible report that has rows, one set per rank; return the paths."""
    reports_dir.mkdir(parents=True, exist_ok=True)
    written = []
    ranks = [row[0] for row in con.execute("SELECT DISTINCT rank FROM run_info ORDER BY rank").fetchall()]
    for rank in ranks:
        for prefix, query in _REPORTS.items():
            result = con.execute(query, {"rank": rank})
            rows = result.fetchall()  # a report's rows: one per op or kernel name
            if not rows:
                continue
            path = reports_dir / f"{prefix}_{rank}.csv"
            with open(path, "w", newline="", encoding="utf-8") as handle:  # quoted only where needed, as MindSpore
                writer = csv.writer(handle, lineterminator="\n")
                writer.writerow(column[0] for column in result.description)
                writer.writerows(rows)
            written.append(path)
    return written

