"""Wall time and peak memory of each pipeline stage of a run: manifest.json's `timings_s` and
`peak_rss_bytes`, printed by `profpipe analyse --profile-stages`.

A stage's peak is this process's peak resident memory while it ran. When the stage sets a new high-water
mark for the process (Linux's VmHWM, what `wait4` and `time -v` report too, never reset here) that mark is
the exact peak; otherwise a thread samples the resident size every 5 ms during the stage and the largest
sample counts. Sources read by worker processes report their processes' peaks (`worker_peak`), kept apart:
the memory a machine needs is the sum over the workers that run at once.
"""
from __future__ import annotations

import resource
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

_PAGE = resource.getpagesize()
_SAMPLE_S = 0.005


def peak_rss_bytes() -> int:
    """This process's peak resident memory since it started."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def rss_bytes() -> int:
    """This process's resident memory now (0 where /proc is missing)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            return int(handle.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


class _Sampler(threading.Thread):
    """The largest resident size seen while it runs."""

    def __init__(self) -> None:
        super().__init__(name="profpipe-rss-sampler", daemon=True)
        self.largest = rss_bytes()
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(_SAMPLE_S):
            self.largest = max(self.largest, rss_bytes())

    def finish(self) -> int:
        self._done.set()
        self.join()
        return max(self.largest, rss_bytes())


@dataclass
class StageMeter:
    """Seconds and peak bytes per stage, in the order the stages ran."""

    timings: dict[str, float] = field(default_factory=dict)
    peaks: dict[str, int] = field(default_factory=dict)
    #: The largest peak any worker process reported per stage (ingest in parallel).
    worker_peaks: dict[str, int] = field(default_factory=dict)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Measure the body as stage `name`."""
        mark = peak_rss_bytes()
        sampler = _Sampler()
        sampler.start()
        started = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = time.perf_counter() - started
            sampled = sampler.finish()
            new_mark = peak_rss_bytes()
            self.peaks[name] = new_mark if new_mark > mark else sampled

    def worker_peak(self, name: str, peak_bytes: int) -> None:
        """A worker's peak while it did part of stage `name`."""
        self.worker_peaks[name] = max(self.worker_peaks.get(name, 0), peak_bytes)

    def rows(self) -> list[list[object]]:
        """Stage, seconds, peak MiB (and the largest worker's, where workers ran), for a plain-text table."""
        return [[name, round(seconds, 3), round(self.peaks.get(name, 0) / 2**20, 1),
                 round(self.worker_peaks[name] / 2**20, 1) if name in self.worker_peaks else None]
                for name, seconds in self.timings.items()]
