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

And one case across them: a Ctrl-C whose KeyboardInterrupt is raised while Python runs a weakref
callback or a `__del__` (an import's module-lock callback, `_get_module_lock.<locals>.cb`) is
printed as "Exception ignored" and dropped, and the command ran on (`nexus stats --watch`
still drawing 2 s after the SIGINT, seen once in a loaded run of the whole suite). Such a
KeyboardInterrupt is raised again in the main thread a moment later, where it propagates.

This module stays light (standard library only, nothing from rich or typer) because it has to
be in place before the heavy imports begin; and it does nothing unless the process is the
`nexus` program itself, so a test importing the CLI keeps its own Ctrl-C.
"""

from __future__ import annotations

import _thread
import atexit
import gc
import os
import signal
import sys
import threading
from types import FrameType
from typing import Any

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


_REDELIVER_AFTER_S = 0.01
"""Not from the hook itself: the interrupt would be raised inside the hook, and dropped again."""


def keep_lost_interrupts() -> None:
    """From here on, a KeyboardInterrupt that Python would drop as unraisable is raised again."""
    previous = sys.unraisablehook
    if getattr(previous, "keeps_lost_interrupts", False):
        return

    def hook(unraisable: Any) -> None:
        if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
            timer = threading.Timer(_REDELIVER_AFTER_S, _thread.interrupt_main)
            timer.daemon = True  # a process already on its way out is not held back by it
            timer.start()
            return
        previous(unraisable)

    hook.keeps_lost_interrupts = True  # type: ignore[attr-defined]
    sys.unraisablehook = hook


IS_PROGRAM = _is_program()
if IS_PROGRAM and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, _end_now)  # from here on, a Ctrl-C ends the start quietly
    atexit.register(_on_exit)
    keep_lost_interrupts()


def command_started() -> None:
    """From here on Ctrl-C raises KeyboardInterrupt, for the command's cleanup (and asyncio's) to run."""
    if IS_PROGRAM and signal.getsignal(signal.SIGINT) is _end_now:
        signal.signal(signal.SIGINT, signal.default_int_handler)
