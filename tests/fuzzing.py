"""The damage harness shared by the fuzz suites (tests/test_fuzz_*.py): damage strategies for raw bytes and
the trust properties every damaged input must keep.

Two levels: `read_damaged` runs discover + one reader per source (fast: hypothesis can try many
damages), `analyse_damaged` the whole pipeline into an output folder. Both assert what the trust
rules promise for any input: no exception but a named ProfpipeError, no reader bug hidden as a
skipped source, the input bytes untouched and no temporary folder left behind.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from profpipe import ingest
from profpipe.discover import discover
from profpipe.errors import ProfpipeError
from profpipe.health import HealthEvent, HealthLedger
from profpipe.options import Options
from profpipe.run import RunResult, analyse, source_error, with_source_keys
from profpipe.tables import conform

#: Examples per fuzz test: few on CI (each is a real read), more with PROFPIPE_FUZZ_EXAMPLES=500.
EXAMPLES = int(os.environ.get("PROFPIPE_FUZZ_EXAMPLES", "25"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=not os.environ.get("PROFPIPE_FUZZ_RANDOM"),
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])
BUG_MARK = "profpipe bug"


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under `folder` (links not followed) with a digest of its bytes and its mode."""
    state = {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink() or not path.is_file():
            state[str(path.relative_to(folder))] = "link" if path.is_symlink() else "dir"
            continue
        state[str(path.relative_to(folder))] = hashlib.blake2b(path.read_bytes(), digest_size=16).hexdigest()
    return state


def scratch_leftovers() -> set[str]:
    """This process's scratch folders in $TMPDIR (there must be none once a read has ended)."""
    return {p.name for p in Path(tempfile.gettempdir()).glob(f"profpipe-*-{os.getpid()}-*")}


@dataclass
class ReadOutcome:
    """What the readers made of a (damaged) folder: the rows per table, the ledger, the sources' errors."""

    tables: dict[str, pa.Table] = field(default_factory=dict)
    health: list[HealthEvent] = field(default_factory=list)
    errors: list[ProfpipeError] = field(default_factory=list)

    def rows(self, table: str) -> int:
        return self.tables[table].num_rows if table in self.tables else 0

    def checks(self) -> set[str]:
        return {e.check for e in self.health}

    @property
    def lossy(self) -> bool:
        return any(e.lossy for e in self.health) or bool(self.errors)


def read_damaged(folder: Path) -> ReadOutcome:
    """Discover `folder` and read every source as the runner does (failures contained per source); assert
    that no failure is a reader bug, the input is unchanged and no scratch folder is left."""
    before = snapshot(folder)
    ledger, outcome = HealthLedger(), ReadOutcome()
    pieces: dict[str, list[pa.Table]] = {}
    for source in discover(folder, warn=ledger.for_source(str(folder), -1)):
        got: dict[str, list[pa.Table]] = {}
        try:
            for name, table in ingest.read(source, ledger.for_source(str(source.directory), source.rank)):
                # as the runner gives the rows their source's keys and its TableSink conforms them
                got.setdefault(name, []).append(conform(name, with_source_keys(name, table, source.rank, source.capture)))
        except Exception as exc:  # noqa: BLE001 - the runner's containment, checked below
            outcome.errors.append(source_error(exc, source.directory))
            continue
        for name, tables in got.items():
            pieces.setdefault(name, []).extend(tables)
    outcome.tables = {name: pa.concat_tables(tables) for name, tables in pieces.items()}
    outcome.health = ledger.events
    for error in outcome.errors:
        assert BUG_MARK not in str(error), f"a reader failed unexpectedly: {error}"
    assert snapshot(folder) == before, "the input was modified"
    assert not scratch_leftovers(), "scratch folders left behind"
    return outcome


def analyse_damaged(folder: Path, out: Path, **options: object) -> RunResult | ProfpipeError:
    """Run the whole pipeline on `folder` into `out`; assert the trust properties; return the result or the
    error the run ended with (a ProfpipeError: anything else fails the test)."""
    before = snapshot(folder)
    earlier = snapshot(out) if out.exists() else None
    try:
        outcome: RunResult | ProfpipeError = analyse(folder, out, Options(**options))
    except ProfpipeError as exc:
        outcome = exc
        assert (snapshot(out) if out.exists() else None) == earlier, "a failed run changed the earlier output"
    assert BUG_MARK not in str(outcome), f"the run failed unexpectedly: {outcome}"
    if isinstance(outcome, RunResult):
        for skipped in outcome.skipped:
            assert BUG_MARK not in skipped["error"], f"a reader failed unexpectedly: {skipped['error']}"
    assert snapshot(folder) == before, "the input was modified"
    assert not [p for p in out.parent.glob(f".{out.name}.*")], "temporary output folders left behind"
    assert not scratch_leftovers(), "scratch folders left behind"
    return outcome


# --- damage strategies: each draws a damaged copy of `data` (bytes) ---------------------------------------

def truncations(data: bytes) -> st.SearchStrategy[bytes]:
    """`data` cut at any byte, at a line boundary or just after one."""
    cuts = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    anywhere = st.integers(0, max(len(data) - 1, 0))
    at_line = st.sampled_from(cuts) if cuts else anywhere
    return st.one_of(anywhere, at_line).map(lambda n: data[:n])


def byte_flips(data: bytes) -> st.SearchStrategy[bytes]:
    """`data` with one to four bytes replaced by any byte."""
    if not data:
        return st.just(data)

    def flip(draw_list: list[tuple[int, int]]) -> bytes:
        out = bytearray(data)
        for index, value in draw_list:
            out[index % len(out)] = value
        return bytes(out)

    return st.lists(st.tuples(st.integers(0, len(data) - 1), st.integers(0, 255)), min_size=1, max_size=4).map(flip)


def line_edits(data: bytes) -> st.SearchStrategy[bytes]:
    """`data` with one line duplicated, dropped or swapped with the next (text formats)."""
    lines = data.split(b"\n")
    if len(lines) < 2:
        return st.just(data)

    def edit(args: tuple[str, int]) -> bytes:
        kind, i = args
        i %= len(lines) - 1
        edited = list(lines)
        if kind == "duplicate":
            edited.insert(i, edited[i])
        elif kind == "drop":
            del edited[i]
        else:
            edited[i], edited[i + 1] = edited[i + 1], edited[i]
        return b"\n".join(edited)

    return st.tuples(st.sampled_from(["duplicate", "drop", "swap"]), st.integers(0, len(lines))).map(edit)


#: Values that break numbers: non-finite, beyond int64, negative, empty, wrong type, bad UTF-8.
BAD_NUMBERS = [b"nan", b"NaN", b"inf", b"-inf", b"Infinity", b"1e400", b"-1", b"-999999999999",
               b"99999999999999999999999", b"9223372036854775808", b"", b"N/A", b"abc", b"0x10", b"1.5.2",
               b"\xff\xfe", b"null", b"true", b"[]", b"{}"]
