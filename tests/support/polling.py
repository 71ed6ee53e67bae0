"""The one way tests wait for something to become true: poll a predicate until it holds or time runs out.

    took = await eventually(lambda: upstream.is_ready, timeout=15, what="the server ready")

`eventually` is for async tests (the event loop keeps running between polls, so the
gateway under test can make the progress being waited for); `eventually_sync` is for
tests that drive separate processes and block. Both fail the test with an AssertionError
naming `what` and the timeout, and return the seconds the wait took. A predicate that
raises (e.g. "the process exited before listening") ends the wait with its own error.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable

Predicate = Callable[[], bool | Awaitable[bool]]

DEFAULT_TIMEOUT = 10.0


def _gave_up(what: str, timeout: float, detail: Callable[[], str] | None) -> AssertionError:
    message = f"gave up waiting for {what} after {timeout:g} s"
    if detail is not None:
        message += f"\n{detail()}"
    return AssertionError(message)


async def eventually(
    predicate: Predicate,
    timeout: float = DEFAULT_TIMEOUT,
    what: str = "the condition",
    *,
    interval: float = 0.02,
    detail: Callable[[], str] | None = None,
) -> float:
    """Await until `predicate()` (sync or async) is truthy; returns the seconds it took.

    `detail` adds context to the failure (a log tail, the current state).
    """
    started = time.monotonic()
    while True:
        outcome = predicate()
        if inspect.isawaitable(outcome):
            outcome = await outcome
        if outcome:
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise _gave_up(what, timeout, detail)
        await asyncio.sleep(interval)


def eventually_sync(
    predicate: Callable[[], bool],
    timeout: float = DEFAULT_TIMEOUT,
    what: str = "the condition",
    *,
    interval: float = 0.05,
    detail: Callable[[], str] | None = None,
) -> float:
    """`eventually` for blocking tests (separate processes, no event loop of ours to keep running)."""
    started = time.monotonic()
    while not predicate():
        if time.monotonic() - started > timeout:
            raise _gave_up(what, timeout, detail)
        time.sleep(interval)
    return time.monotonic() - started
