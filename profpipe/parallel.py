"""Where ingest work runs: how many worker processes this machine can take, and the local process pool.

`analyse` reads the sources of one run in parallel with it (run.ingest_sources); `batch` sends the sources
and runs of many to it, or to a Dask cluster (batch.py). Workers start by forkserver: a fresh interpreter per
worker, never a fork of a process that holds DuckDB's threads.
"""
from __future__ import annotations

import concurrent.futures as cf
import os
from collections.abc import Callable
from typing import Any

from .database import configure

#: A reader needs at most about this many times its source's size in memory, plus a fixed part.
_BYTES_PER_SOURCE_BYTE = 4
_FIXED_WORKER_BYTES = 512 * 2**20


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def local_workers(largest_source_bytes: int) -> int:
    """Worker processes for this machine: one per core, fewer when the available memory cannot hold one
    largest source per worker (a reader needs about 4 times a source's size at most, plus 512 MiB)."""
    per_worker = _FIXED_WORKER_BYTES + _BYTES_PER_SOURCE_BYTE * largest_source_bytes
    return max(1, min(cores(), available_memory() // per_worker))


def available_memory() -> int:
    """Bytes of memory available to new work (MemAvailable; all of it where /proc is missing)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def process_pool(workers: int, memory_mb: int | None = None) -> cf.ProcessPoolExecutor:
    """A pool of `workers` processes started by forkserver, whose DuckDB connections share the cores (and take at
    most `memory_mb` MiB each, where given)."""
    import multiprocessing

    return cf.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("forkserver"),
                                  initializer=configure, initargs=(max(1, cores() // workers), memory_mb))


def stop_workers(executor: cf.ProcessPoolExecutor) -> None:
    """Kill the pool's workers now and drop its queued work (an interrupted run must leave no worker writing
    into the folder it removes), then wait for them to be gone."""
    processes = list((getattr(executor, "_processes", None) or {}).values())
    executor.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.kill()
    for process in processes:
        process.join(timeout=10)


def submit(executor: cf.Executor, function: Callable[..., Any], *args: Any) -> cf.Future:
    """`executor.submit(function, *args)`; a process pool that broke before the work was handed over (a worker
    died since the caller last waited) gives a future failed with BrokenProcessPool instead of raising, so the
    caller meets a dead worker in one place: the future's result."""
    try:
        return executor.submit(function, *args)
    except cf.process.BrokenProcessPool as broken:
        failed: cf.Future = cf.Future()
        failed.set_exception(broken)
        return failed
