"""The error model shared by every stage.

A reader that meets bad input raises `InputError`, which names the file and, where it
can, the line or byte offset and what was expected. The runner turns it into a skipped
rank (or a failed run with --strict); the CLI prints it without a traceback.
"""
from __future__ import annotations

from pathlib import Path


class ProfpipeError(Exception):
    """Base of every error profpipe reports to users as a plain message."""


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


class SchemaError(ProfpipeError):
    """A table produced by a reader does not match its declaration in schemas/tables.json."""
