"""Wall time and peak memory of each pipeline stage of a run: manifest.json's `timings_s` and
`peak_rss_bytes`, printed by `profpipe analyse --profile-stages`.

A stage's peak is this process's peak resident memory while it ran: Linux's high-water mark (VmHWM) is
reset when the stage starts (/proc/self/clear_refs) and read when it ends. Where that cannot be done, the
process's peak so far (getrusage) stands in. Sources read by worker processes report their own peaks
(`worker_peak`), kept apart: the memory a machine needs is the sum over the workers that run at once.
"""
from __future__ import annotations

import resource
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


def reset_peak_rss() -> bool:
    """Restart this process's peak-memory count at its current size; False where the system cannot."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def peak_rss_bytes() -> int:
    """This process's peak resident memory since the last reset_peak_rss (else since it started)."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


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
        reset_peak_rss()
        started = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = time.perf_counter() - started
            self.peaks[name] = peak_rss_bytes()

    def worker_peak(self, name: str, peak_bytes: int) -> None:
        """A worker's peak while it did part of stage `name`."""
        self.worker_peaks[name] = max(self.worker_peaks.get(name, 0), peak_bytes)

    def rows(self) -> list[list[object]]:
        """Stage, seconds, peak MiB (and the largest worker's, where workers ran), for a plain-text table."""
        return [[name, round(seconds, 3), round(self.peaks.get(name, 0) / 2**20, 1),
                 round(self.worker_peaks[name] / 2**20, 1) if name in self.worker_peaks else None]
                for name, seconds in self.timings.items()]
