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
        sys.stderr.write(f"profpipe: {exc}; nothing was written, the earlier output is kept\n")
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
