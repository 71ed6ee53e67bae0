"""Newline-delimited JSON-RPC on a byte stream (stdio): one message per line, into a peer."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

LINE_LIMIT = 512 * 1024 * 1024  # one JSON-RPC message per line; results can be large


async def feed_lines(
    stream: asyncio.StreamReader,
    feed: Callable[[bytes], Awaitable[None]],
    on_overrun: Callable[[], Awaitable[None]],
) -> None:
    """Hand every non-blank line of `stream` to `feed` until end of file.

    A line longer than the stream's limit is skipped (its bytes read and dropped) after
    `on_overrun` says so; a last line without a newline still counts.
    """
    while True:
        try:
            line = await stream.readuntil(b"\n")
        except asyncio.IncompleteReadError as partial:
            if partial.partial.strip():
                await feed(partial.partial)
            return
        except asyncio.LimitOverrunError:
            await on_overrun()
            await stream.read(LINE_LIMIT)
            continue
        if line.strip():
            await feed(line)
