"""The event loop Nexus runs on: uvloop where it installs (Linux, macOS), else asyncio's own.

Why: the relay's hot path is pipe and socket I/O plus task switches; libuv's loop does both
with less per-event work than the default selector loop (measured: docs/PERFORMANCE.md).
`NEXUS_EVENT_LOOP=asyncio` turns it off (to compare, or to debug).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from mcp_nexus import inherited_fds

T = TypeVar("T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    if os.environ.get("NEXUS_EVENT_LOOP", "uvloop") == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:  # Windows, or a platform without a wheel
        return None
    return uvloop.new_event_loop  # type: ignore[no-any-return]


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)` on the chosen loop."""
    inherited_fds.seal()  # before anything is spawned: uvloop's spawn passes on what is inheritable
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
