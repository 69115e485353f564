"""profpipe on N ranks of msprof timelines against the plain DuckDB JSON parse of the same files, in one run.

profpipe reads msprof timelines with DuckDB's JSON reader, the fastest parser it uses, so the
practical limit is that reader parsing every event of every file into a table (the same
columns profpipe asks for) and nothing else. profpipe's whole analysis (ingest, models,
reports, timeline) runs beside it. The input is read once first (page cache), each command
runs `--repeat` times and the fastest run counts.

Usage: python benchmarks/run_msprof.py --ranks 8 --mb 200
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run_ascend_raw import fastest  # noqa: E402
from run_mindspore_cpu import WORK  # noqa: E402
from scale_msprof import default_source, scale  # noqa: E402

_PARSE = """
import sys, glob, duckdb
files = sorted(glob.glob(sys.argv[1] + "/*/device_*/timeline/msprof_*.json"))
columns = {"name": "VARCHAR", "pid": "VARCHAR", "tid": "VARCHAR", "ts": "VARCHAR", "dur": "VARCHAR",
           "ph": "VARCHAR", "cat": "VARCHAR", "args": "JSON"}
con = duckdb.connect()
con.execute("CREATE TABLE events AS SELECT * FROM read_json($files, format = 'array', columns = " +
            "{" + ", ".join(f"'{k}': '{v}'" for k, v in columns.items()) + "})", {"files": files})
print(con.execute("SELECT count(*) FROM events").fetchall()[0][0])
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--mb", type=float, default=200, help="MiB of timeline JSON per rank")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--repeat", type=int, default=3, help="runs per command; the fastest counts")
    args = parser.parse_args()
    folder = WORK / f"msprof_{args.ranks}x{int(args.mb)}mb"
    if not folder.exists():
        scale(default_source(), folder, args.ranks, args.mb)
    files = [p for p in folder.rglob("*") if p.is_file()]
    bytes_in = sum(p.stat().st_size for p in files)
    for path in files:
        path.read_bytes()
    out = WORK / "out_msprof"
    parse = fastest([sys.executable, "-c", _PARSE, str(folder)], args)
    ours = fastest([sys.executable, "-c", "from profpipe.cli import app; app()", "analyse", str(folder),
                    "-o", str(out)], args)
    row = {"ranks": args.ranks, "input_mib": round(bytes_in / 2**20, 1), "duckdb_json_parse": parse, "profpipe": ours}
    if parse["ok"] and ours["ok"]:
        manifest = json.loads((out / "manifest.json").read_text())
        row["wall_ratio"] = round(ours["wall_s"] / parse["wall_s"], 2)
        row["peak_rss_ratio"] = round(ours["peak_rss_mib"] / parse["peak_rss_mib"], 2)
        row["rows"] = {k: v for k, v in manifest["row_counts"].items() if v}
        row["stage_s"] = {stage: round(seconds, 2) for stage, seconds in manifest["timings_s"].items()}
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
