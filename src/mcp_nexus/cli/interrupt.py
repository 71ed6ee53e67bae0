"""Ctrl-C ends any `nexus` command at once: exit status 130, no traceback. Imported first by cli/app.py.

Three windows, three answers:

- while `nexus` starts (its imports take seconds on a busy machine), SIGINT ends the process
  on the spot: nothing is open yet that needs closing;
- while a command runs, SIGINT raises KeyboardInterrupt as usual, so `with` blocks and
  `finally` clauses close what is open (a Live display, a private gateway's servers) and
  typer turns it into exit status 130;
- on the way out, the objects of every imported module are moved out of the garbage
  collector's sight: the interpreter's last collections walked them all, which took
  seconds under load after a Ctrl-C that had already been answered.

This module stays light (standard library only, nothing from rich or typer) because it has to
be in place before the heavy imports begin; and it does nothing unless the process is the
`nexus` program itself, so a test importing the CLI keeps its own Ctrl-C.
"""

from __future__ import annotations

import atexit
import gc
import os
import signal
import sys
from types import FrameType

INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command Ctrl-C ended


def _is_program() -> bool:
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None) or sys.argv[0]
    name = os.path.basename(path)
    return name in ("nexus", "nexus.exe", "nexus-script.py") or path.endswith(
        os.path.join("mcp_nexus", "__main__.py")
    )


def _end_now(signum: int, frame: FrameType | None) -> None:
    os._exit(INTERRUPTED)


def _on_exit() -> None:
    signal.signal(signal.SIGINT, _end_now)  # a Ctrl-C now has nothing left to interrupt
    gc.freeze()  # the final collections then skip what the imports made: a prompt exit


IS_PROGRAM = _is_program()
if IS_PROGRAM and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, _end_now)  # from here on, a Ctrl-C ends the start quietly
    atexit.register(_on_exit)


def command_started() -> None:
    """From here on Ctrl-C raises KeyboardInterrupt, for the command's cleanup (and asyncio's) to run."""
    if IS_PROGRAM and signal.getsignal(signal.SIGINT) is _end_now:
        signal.signal(signal.SIGINT, signal.default_int_handler)
