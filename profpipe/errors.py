"""The error model shared by every stage.

A reader that meets bad input raises `InputError`, which names the file and, where it
can, the line or byte offset and what was expected. The runner turns it into a skipped
source and a trace_health row (or a failed run with --strict); the CLI prints it without a
traceback. Each error class maps to one exit status (see EXIT_* and docs/output.md).
"""
from __future__ import annotations

from functools import partial
from pathlib import Path


#: Exit statuses of `profpipe analyse` (docs/output.md, "Exit status"); EXIT_REGRESSION is the CI gate's of
#: `profpipe diff --fail-above` and `profpipe batch --fail-above`.
EXIT_COMPLETE = 0
EXIT_NOTHING_USABLE = 1
EXIT_USAGE = 2
EXIT_PARTIAL = 3
EXIT_REGRESSION = 4
EXIT_INTERRUPTED = 130  # SIGINT (Ctrl-C)
EXIT_TERMINATED = 143  # SIGTERM


class ProfpipeError(Exception):
    """Base of every error profpipe reports to users as a plain message; the run produced nothing usable."""

    exit_code = EXIT_NOTHING_USABLE


class NoProfilerData(ProfpipeError):
    """The input holds no file of any format profpipe reads."""


class UsageError(ProfpipeError):
    """The command itself cannot be carried out: a bad argument, an output folder that must not be replaced."""

    exit_code = EXIT_USAGE


class OutOfSpace(ProfpipeError):
    """A folder profpipe writes to (the output's or the scratch folder) is full."""


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived: the run stops, removing what it wrote. A KeyboardInterrupt, not an
    Exception, so no reader's `except Exception` swallows it and Python callers catch it as Ctrl-C."""

    def __init__(self, signal_name: str, exit_code: int) -> None:
        super().__init__(f"interrupted by {signal_name}")
        self.exit_code = exit_code


class InputError(ProfpipeError):
    """A raw input file cannot be read as the format it claims to be."""

    def __init__(self, path: str | Path, problem: str, *, line: int | None = None,
                 offset: int | None = None) -> None:
        self.path = str(path)
        self.problem = problem
        self.line = line
        self.offset = offset
        where = self.path
        if line is not None:
            where += f", line {line}"
        if offset is not None:
            where += f", byte offset {offset}"
        super().__init__(f"{where}: {problem}")

    def __reduce__(self) -> tuple:
        # travels back from a worker process intact (the default would call __init__ with the message alone)
        return partial(type(self), line=self.line, offset=self.offset), (self.path, self.problem)


class SchemaError(ProfpipeError):
    """A table produced by a reader does not match its declaration in schemas/tables.json."""


def first_line_of(exc: BaseException, fallback: str = "no message") -> str:
    """The first line of a library exception's message, to quote in one of profpipe's; where the message is
    empty, the exception's type name and `fallback`. (A DuckDB message that quotes bytes that are not UTF-8
    arrives empty on CPython before gh-107915, 3.11.2 among them; later ones raise UnicodeDecodeError.)"""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else f"{type(exc).__name__}: {fallback}"
