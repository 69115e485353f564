"""`profpipe batch` over a generated batch of 200+ ranks: full, incremental, unchanged, 50 vs 200 ranks, local vs Dask.

The batch is written once into `--work` (default: $TMPDIR/profpipe-bench-batch, outside the repository)
from the project's own generators and fixtures, and the scale_* scripts for the large ranks:

* MindSpore GPU (fixtures/generators/mindspore_gpu.py `simulate` / `_write_rank`): runs of 8 and 16
  ranks of a few hundred steps, and one run of 4 ranks of 8,000 steps (about 19 MiB each);
* PyTorch Kineto (fixtures/generators/kineto.py `Trace`): runs of 8 and 16 ranks, 200 or 50 steps each;
* msprof era-D exports (scale_msprof.scale; its default source): 8 ranks x 20 MiB and two runs of 4 small ranks;
* MindSpore CPU (scale_mindspore_cpu.scale of the LeNet fixture): 4 ranks x 26 MiB, four runs of 4
  unscaled ranks (the fixture's files renamed per rank);
* Nsight Systems SQLite (fixtures/nsys/report1.sqlite as rank-<r>.sqlite): runs of 8 ranks;
* MindData sink logs alone (fixtures/minddata_sink/ascend, renamed per rank): runs of 4 ranks.

The "52-rank" batch is a hard-linked copy of a subset of the runs that keeps the three large runs, so
the largest source is the same at both sizes and only the number of ranks differs.

Each batch is a `profpipe batch` subprocess (python -c "from profpipe.cli import app; app()" batch ...),
measured for wall time and memory of its whole process tree: a sampler thread walks the driver's
descendants (the forkserver and the pool workers, or the Dask nanny and worker processes) every 0.1 s
and sums their RSS and their PSS (/proc/<pid>/smaps_rollup: shared pages counted once, split among the
processes that share them). PSS is the figure to read: summed RSS counts the libraries every worker
maps once per worker, and wait4's ru_maxrss sees only the driver and the children it reaps itself (not
the pool's workers, which the forkserver reaps). The sampled sums can miss a spike shorter than 0.1 s.

Measurements (each on a warehouse of its own, all with `--workers N`, default 2):
  1. full batch of the 52-rank subset (peak memory at ~50 ranks);
  2. full batch of all ranks (wall, ranks per minute, MiB/s, peak memory at ~200 ranks);
  3. the same warehouse after one file of one run is rewritten (same bytes, new mtime): incremental;
  4. the same warehouse again, nothing changed;
  5. full batch of all ranks with `--executor dask` (a LocalCluster of the same worker count); then
     both warehouses are compared table by table (row counts and an order-free hash of every row).

Usage: python benchmarks/run_batch.py [--work DIR] [--workers 2] [--regenerate]
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"
sys.path.insert(0, str(HERE))
import scale_mindspore_cpu  # noqa: E402
import scale_msprof  # noqa: E402

LENET = next((FIXTURES / "mindspore_cpu" / "lenet_graph").glob("*_ascend_ms"))
#: Bump when the batch's contents change: a work folder with another version is generated again.
BATCH_VERSION = 1


def _generator(name: str):
    """A module of fixtures/generators, imported under a name of its own (`kineto` is also a profpipe module)."""
    spec = importlib.util.spec_from_file_location(f"_gen_{name}", FIXTURES / "generators" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


# --- the runs --------------------------------------------------------------------------------------------

#: (run id, kind, ranks, size: steps for gpu/kineto, MiB per rank for msprof/cpu_scaled, unused otherwise)
RUNS = ([(f"gpu-{i:02d}", "gpu", 8, 300) for i in range(1, 9)] + [("gpu-wide", "gpu", 16, 100),
                                                                  ("gpu-large", "gpu", 4, 8000)]
        + [(f"kineto-{i:02d}", "kineto", 8, 200) for i in range(1, 5)] + [("kineto-wide", "kineto", 16, 50)]
        + [("msprof-large", "msprof", 8, 20)] + [(f"msprof-{i:02d}", "msprof", 4, 1) for i in range(1, 3)]
        + [("cpu-large", "cpu_scaled", 4, 30)] + [(f"cpu-{i:02d}", "cpu", 4, 0) for i in range(1, 5)]
        + [(f"nsys-{i:02d}", "nsys", 8, 0) for i in range(1, 5)]
        + [(f"minddata-{i:02d}", "minddata", 4, 0) for i in range(1, 3)])
#: The ~50-rank batch: the three large runs (same largest source as the full batch) and one small run per format.
SUBSET = ("gpu-large", "msprof-large", "cpu-large", "gpu-01", "kineto-01", "nsys-01", "cpu-01", "msprof-01",
          "minddata-01")
#: The run whose file the incremental batch rewrites: an ordinary 8-rank run.
CHANGED = ("gpu-03", "profiler/step_trace_profiling_3.txt")


def write_gpu(folder: Path, ranks: int, steps: int) -> None:
    gpu = _generator("mindspore_gpu")
    scenario = gpu.Scenario(folder.name, "2.x", "graph", tuple(range(ranks)), steps)
    profiler = folder / "profiler"
    profiler.mkdir(parents=True)
    for rank in range(ranks):
        gpu._write_rank(profiler, rank, scenario, gpu.simulate(rank, steps, seed=zlib.crc32(f"{folder.name}/{rank}".encode())))


def write_kineto(folder: Path, ranks: int, steps: int) -> None:
    kineto = _generator("kineto")
    folder.mkdir(parents=True)
    for rank in range(ranks):
        trace = kineto.Trace("current")
        start = 86_400_000_000_000 + rank * 50_000
        for number in range(1, steps + 1):
            trace.step(number, start + (number - 1) * 10_000_000)
        document = trace.document(rank)
        document["distributedInfo"]["world_size"] = ranks
        (folder / f"rank-{rank}.pt.trace.json").write_text(json.dumps(document) + "\n")


def write_msprof(folder: Path, ranks: int, mb: float) -> None:
    scale_msprof.scale(scale_msprof.default_source(), folder, ranks, mb)


def _cpu_ranks(framework_source: Path, folder: Path, ranks: int) -> None:
    """`ranks` copies of a MindSpore CPU *_ascend_ms folder, rank r's FRAMEWORK files named _r (hard links of
    one scaled copy would share the rank id, so the files are copied under their new names)."""
    for rank in range(ranks):
        target = folder / f"vm_{5000 + rank}_20261124000000{rank:03d}_ascend_ms" / "FRAMEWORK"
        target.mkdir(parents=True)
        for path in (framework_source / "FRAMEWORK").iterdir():
            shutil.copyfile(path, target / path.name.replace("_0.", f"_{rank}."))


def write_cpu(folder: Path, ranks: int, mb: float) -> None:
    if not mb:
        _cpu_ranks(LENET, folder, ranks)
        return
    scaled = folder.parent / f".{folder.name}-scaled" / LENET.name
    scale_mindspore_cpu.scale(LENET, scaled, mb)
    _cpu_ranks(scaled, folder, ranks)
    shutil.rmtree(scaled.parent)


def write_nsys(folder: Path, ranks: int, _: float) -> None:
    folder.mkdir(parents=True)
    for rank in range(ranks):
        shutil.copyfile(FIXTURES / "nsys" / "report1.sqlite", folder / f"rank-{rank}.sqlite")


def write_minddata(folder: Path, ranks: int, _: float) -> None:
    folder.mkdir(parents=True)
    for rank in range(ranks):
        for path in (FIXTURES / "minddata_sink" / "ascend").glob("*_0.*"):
            shutil.copyfile(path, folder / path.name.replace("_0.", f"_{rank}."))


WRITERS = {"gpu": write_gpu, "kineto": write_kineto, "msprof": write_msprof, "cpu_scaled": write_cpu,
           "cpu": write_cpu, "nsys": write_nsys, "minddata": write_minddata}


def generate(work: Path, regenerate: bool) -> tuple[Path, Path]:
    """The full batch (work/all) and the subset (work/subset, hard links); written when missing or stale."""
    stamp = work / "generated.json"
    spec = {"version": BATCH_VERSION, "runs": RUNS, "subset": SUBSET}
    if not regenerate and stamp.is_file() and json.loads(stamp.read_text()) == json.loads(json.dumps(spec)):
        return work / "all", work / "subset"
    shutil.rmtree(work, ignore_errors=True)
    for run, kind, ranks, size in RUNS:
        started = time.perf_counter()
        WRITERS[kind](work / "all" / run, ranks, size)
        print(f"generated {run}: {ranks} ranks, {_size(work / 'all' / run) / 2**20:.1f} MiB "
              f"({time.perf_counter() - started:.1f} s)", file=sys.stderr, flush=True)
    for run in SUBSET:
        for path in sorted((work / "all" / run).rglob("*")):
            target = work / "subset" / run / path.relative_to(work / "all" / run)
            if path.is_dir():
                target.mkdir(parents=True, exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                os.link(path, target)
    stamp.write_text(json.dumps(spec))
    return work / "all", work / "subset"


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _files(folder: Path) -> int:
    return sum(1 for p in folder.rglob("*") if p.is_file())


# --- measuring a process tree ----------------------------------------------------------------------------

def _pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def measure_tree(command: list[str], timeout_s: float, env: dict | None = None) -> dict:
    """Wall seconds of `command`; peak summed RSS and PSS of it and all its descendants (sampled every 0.1 s);
    wait4's ru_maxrss (the driver, and the children it reaped: Dask's workers, not the pool's, which the
    forkserver reaps); the load average before and after (the machine is shared); its stdout."""
    load_before = os.getloadavg()[0]
    out, log = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=out, stderr=log, start_new_session=True, env=env)
    peak = {"rss": 0, "pss": 0, "processes": 0}
    done = threading.Event()

    def sample() -> None:
        try:
            root = psutil.Process(process.pid)
        except psutil.Error:
            return
        while not done.is_set():
            try:
                tree = [root] + root.children(recursive=True)
            except psutil.Error:
                tree = []
            rss = pss = 0
            for member in tree:
                try:
                    rss += member.memory_info().rss
                except psutil.Error:
                    continue
                pss += _pss_kib(member.pid) * 1024
            peak["rss"], peak["pss"] = max(peak["rss"], rss), max(peak["pss"], pss)
            peak["processes"] = max(peak["processes"], len(tree))
            done.wait(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - started > timeout_s:
            os.killpg(process.pid, 9)
            os.wait4(process.pid, 0)
            done.set()
            return {"ok": False, "error": f"timed out after {timeout_s:.0f} s"}
        time.sleep(0.02)
    wall = time.perf_counter() - started
    done.set()
    sampler.join()
    try:  # Dask or the pool may leave a straggler in the session for a moment; never leave one running
        os.killpg(process.pid, 9)
    except ProcessLookupError:
        pass
    code = os.waitstatus_to_exitcode(status)
    out.seek(0)
    log.seek(0)
    result = {"ok": code == 0, "wall_s": round(wall, 2), "tree_peak_pss_mib": round(peak["pss"] / 2**20),
              "tree_peak_rss_mib": round(peak["rss"] / 2**20), "wait4_maxrss_mib": round(usage.ru_maxrss / 1024),
              "processes": peak["processes"], "load_1min": [round(load_before, 1), round(os.getloadavg()[0], 1)],
              "stdout": out.read().decode(errors="replace")}
    if code != 0:
        result["error"] = f"exit {code}: {log.read().decode(errors='replace')[-600:]}"
    return result


def run_batch(root: Path, warehouse: Path, executor: str, workers: int, timeout_s: float) -> dict:
    command = [sys.executable, "-c", "from profpipe.cli import app; app()", "batch", str(root), "-w", str(warehouse),
               "--executor", executor, "--workers", str(workers), "--json"]
    result = measure_tree(command, timeout_s)
    if result["ok"]:
        # DuckDB 2.0 prints its progress bar to stdout for a query over 2 s (workers inherit stdout): the
        # summary is the JSON object at the end
        stdout = result.pop("stdout")
        summary = json.loads(stdout[stdout.rindex('{\n  "warehouse"'):])
        result.update({k: len(summary[k]) for k in ("analysed", "unchanged", "failed", "empty")},
                      batch_wall_s=round(summary["wall_s"], 2))
        if summary["failed"]:
            result["failed_runs"] = summary["failed"]
    return result


# --- what the warehouses hold ----------------------------------------------------------------------------

def table_digest(warehouse: Path) -> dict[str, tuple[int, int]]:
    """Per public table: (rows, an order-free hash of every row). batch_runs is left out (timings differ)."""
    from profpipe.warehouse import connect

    con = connect(warehouse)
    tables = [t for (t,) in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()]
    digest = {}
    for table in sorted(tables):
        rows, hashed = con.execute(f'SELECT count(*), coalesce(sum(hash(t)::HUGEINT), 0) FROM "{table}" t').fetchone()
        digest[table] = (int(rows), int(hashed))
    con.close()
    return digest


def same_within(table: str, left: Path, right: Path, relative: float = 1e-12) -> bool:
    """The rows of `table` in two warehouses, sorted, equal with floats within `relative` of each other
    (DuckDB's parallel aggregates sum floats in no fixed order: two runs of `analyse` on one input differ
    in the last bits of stddev_ns)."""
    from profpipe.warehouse import connect

    sides = []
    for warehouse in (left, right):
        con = connect(warehouse)
        sides.append(con.execute(f'SELECT * FROM "{table}" ORDER BY ALL').fetchall())
        con.close()

    def close(a, b) -> bool:
        if isinstance(a, float) and isinstance(b, float):
            return a == b or abs(a - b) <= relative * max(abs(a), abs(b))
        return a == b

    return len(sides[0]) == len(sides[1]) and all(
        all(close(a, b) for a, b in zip(x, y)) for x, y in zip(*sides))


def warehouse_facts(warehouse: Path) -> dict:
    manifest = warehouse / "warehouse.json"
    data = json.loads(manifest.read_text())
    files = sum(len(v) for run in data["runs"].values() for v in run["files"].values())
    from profpipe.warehouse import connect

    con = connect(warehouse)
    ledger = con.execute("SELECT count(*), sum(ranks), sum(input_bytes), max(wall_s), sum(ingest_s), sum(models_s), "
                         "count(*) FILTER (WHERE status NOT IN ('ok', 'partial')) FROM batch_runs").fetchone()
    con.close()
    return {"runs": len(data["runs"]), "manifest_kib": round(manifest.stat().st_size / 1024, 1),
            "manifest_kib_per_run": round(manifest.stat().st_size / 1024 / max(1, len(data["runs"])), 2),
            "parquet_files": files, "parquet_files_per_run": round(files / max(1, len(data["runs"])), 1),
            "catalog_kib": round((warehouse / "catalog.duckdb").stat().st_size / 1024, 1),
            "tables_mib": round(_size(warehouse / "tables") / 2**20, 1),
            "ledger_ranks": ledger[1], "ledger_input_mib": round((ledger[2] or 0) / 2**20, 1),
            "slowest_run_wall_s": round(ledger[3] or 0, 2), "ingest_s_sum": round(ledger[4] or 0, 1),
            "models_s_sum": round(ledger[5] or 0, 1), "runs_not_ok": ledger[6]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "profpipe-bench-batch",
                        help="where the batch and the warehouses are written (outside the repository)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--regenerate", action="store_true", help="write the batch again even if it is there")
    parser.add_argument("--skip-dask", action="store_true")
    args = parser.parse_args()
    work = args.work.resolve()
    all_runs, subset = generate(work / "input", args.regenerate)
    for folder in (all_runs, subset):  # both executors and both sizes find the input in the page cache
        for path in folder.rglob("*"):
            if path.is_file():
                path.read_bytes()
    inputs = {name: {"runs": len(list(folder.iterdir())), "ranks": sum(r[2] for r in RUNS if (folder / r[0]).is_dir()),
                     "mib": _size(folder) / 2**20, "files": _files(folder),
                     "largest_rank_mib": max(_mean_rank_mib(folder / r[0]) for r in RUNS if (folder / r[0]).is_dir())}
              for name, folder in (("all", all_runs), ("subset", subset))}
    print(json.dumps({"inputs": inputs, "msprof_source": str(scale_msprof.default_source())}), flush=True)
    warehouses = work / "warehouses"
    shutil.rmtree(warehouses, ignore_errors=True)
    rows = {}
    rows["full_subset"] = run_batch(subset, warehouses / "local-subset", "local", args.workers, args.timeout)
    print(json.dumps({"full_subset": rows["full_subset"]}), flush=True)
    rows["full"] = run_batch(all_runs, warehouses / "local", "local", args.workers, args.timeout)
    print(json.dumps({"full": rows["full"]}), flush=True)
    changed = all_runs / CHANGED[0] / CHANGED[1]
    changed.write_bytes(changed.read_bytes())  # same bytes, a new mtime: the run's stat fingerprint changes
    rows["incremental"] = run_batch(all_runs, warehouses / "local", "local", args.workers, args.timeout)
    print(json.dumps({"incremental": rows["incremental"]}), flush=True)
    rows["unchanged"] = run_batch(all_runs, warehouses / "local", "local", args.workers, args.timeout)
    print(json.dumps({"unchanged": rows["unchanged"]}), flush=True)
    facts = warehouse_facts(warehouses / "local")
    print(json.dumps({"warehouse": facts}), flush=True)
    identical = None
    if not args.skip_dask:
        rows["dask"] = run_batch(all_runs, warehouses / "dask", "dask", args.workers, args.timeout)
        print(json.dumps({"dask": rows["dask"]}), flush=True)
        if rows["dask"]["ok"] and rows["full"]["ok"]:
            local, dask = table_digest(warehouses / "local"), table_digest(warehouses / "dask")
            differing = sorted(t for t in set(local) | set(dask) if local.get(t) != dask.get(t))
            identical = {"tables": len(local), "rows": sum(r for r, _ in local.values()),
                         "row_counts_differ": sorted(t for t in differing if local.get(t, (None,))[0] != dask.get(t, (None,))[0]),
                         "bits_differ": differing,
                         "differ_beyond_1e-12": [t for t in differing if not same_within(t, warehouses / "local",
                                                                                         warehouses / "dask")]}
            print(json.dumps({"local_vs_dask": identical}), flush=True)
    print_table(inputs, rows, facts, identical, args.workers)


def _mean_rank_mib(run: Path) -> float:
    """MiB per rank of a run (its ranks are equal in size: the largest rank of the batch is the largest of these)."""
    ranks = next(r[2] for r in RUNS if r[0] == run.name)
    return _size(run) / 2**20 / ranks


def print_table(inputs: dict, rows: dict, facts: dict, identical: dict | None, workers: int) -> None:
    full, subset = inputs["all"], inputs["subset"]

    def show(r: dict) -> str:
        return f"{r['wall_s']} s" if r.get("ok") else f"failed: {r.get('error', '')[:200]}"

    def memory(r: dict) -> str:
        return (f"{r['tree_peak_pss_mib']:,} MiB PSS / {r['tree_peak_rss_mib']:,} MiB RSS "
                f"({r['processes']} processes)") if r.get("ok") else "-"

    print(f"\nInput: {full['runs']} runs, {full['ranks']} ranks, {full['mib']:,.1f} MiB in {full['files']:,} files "
          f"(largest rank {full['largest_rank_mib']:.1f} MiB); subset {subset['runs']} runs, {subset['ranks']} ranks, "
          f"{subset['mib']:,.1f} MiB. --workers {workers}.\n")
    print("| batch | wall | throughput / share | peak memory of the process tree | runs analysed / unchanged / failed |")
    print("|---|---|---|---|---|")
    f = rows["full"]
    for key, label in (("full", f"full, local, {full['ranks']} ranks"),
                       ("full_subset", f"full, local, {subset['ranks']} ranks"),
                       ("incremental", f"incremental: one file of `{CHANGED[0]}` rewritten"),
                       ("unchanged", "nothing changed"), ("dask", f"full, Dask LocalCluster, {full['ranks']} ranks")):
        r = rows.get(key)
        if r is None:
            continue
        if key in ("full", "dask", "full_subset") and r.get("ok"):
            size = full if key != "full_subset" else subset
            rate = (f"{size['ranks'] / r['wall_s'] * 60:,.0f} ranks/min, {size['mib'] / r['wall_s']:,.1f} MiB/s")
        elif r.get("ok") and f.get("ok"):
            rate = f"{100 * r['wall_s'] / f['wall_s']:.1f} % of the full batch"
        else:
            rate = "-"
        counts = f"{r.get('analysed', '-')} / {r.get('unchanged', '-')} / {r.get('failed', '-')}"
        print(f"| {label} | {show(r)} | {rate} | {memory(r)} | {counts} |")
    print(f"\nWarehouse after the full batch: {json.dumps(facts)}")
    if identical is not None:
        print(f"Local vs Dask: {identical['tables']} tables, {identical['rows']:,} rows; row counts differ in "
              f"{identical['row_counts_differ'] or 'no table'}; rows differ bit for bit in {identical['bits_differ'] or 'no table'}, "
              f"beyond a relative 1e-12 in {identical['differ_beyond_1e-12'] or 'no table'}")
    import duckdb
    import polars
    import pyarrow
    import distributed
    from profpipe.version import VERSION
    print(f"\n{datetime.date.today()}, {os.cpu_count()} cores, "
          f"{psutil.virtual_memory().total / 2**30:.0f} GiB, profpipe {VERSION}, Python {sys.version.split()[0]}, "
          f"DuckDB {duckdb.__version__}, polars {polars.__version__}, pyarrow {pyarrow.__version__}, "
          f"distributed {distributed.__version__}")


if __name__ == "__main__":
    main()
