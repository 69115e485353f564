"""The `profpipe` command's entry point (also `python -m profpipe`): signal handlers first, then the CLI.

Ctrl-C or SIGTERM at any moment, even while the libraries load, ends the command with one line and
exit status 130 / 143, never a traceback.
"""
from __future__ import annotations

import sys

from .errors import Interrupted
from .safety import install_signal_handlers


def main() -> None:
    try:
        install_signal_handlers()  # inside the try: a signal just after it ends the command with one line
        from .cli import app

        app()
    except Interrupted as exc:
        _stop(exc)
    except SystemExit as exc:
        interrupted = _interruption_behind(exc)
        if interrupted is None:
            raise
        _stop(interrupted)


def _stop(exc: Interrupted) -> None:
    sys.stderr.write(f"profpipe: {exc}; nothing was written, the earlier output is kept\n")
    sys.exit(exc.exit_code)


def _interruption_behind(exit_: SystemExit) -> Interrupted | None:
    """The signal typer turned into a silent exit 130 (its main catches any KeyboardInterrupt, as a signal arriving
    while the command parses its options is): typer's Exit, raised from the interruption, is the context."""
    cause = exit_.__context__.__cause__ if exit_.__context__ is not None else None
    return cause if isinstance(cause, Interrupted) else None


if __name__ == "__main__":
    main()
