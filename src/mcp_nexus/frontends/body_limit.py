"""Read an HTTP request body up to a cap, so an oversized one is refused before it is in memory.

Why here and not per route: every endpoint behind the guard (`/mcp`, `/api/...`) reads its body
whole, so without one cap for all of them a single large POST grows the gateway by its size.
The declared Content-Length is checked first (nothing is read); a chunked or lying body is
counted while it streams and abandoned as soon as it passes the cap.
"""

from __future__ import annotations

from collections import deque

from starlette.types import Message, Receive

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024  # the same default as the MCP SDK's /mcp limit


class BodyTooLargeError(Exception):
    def __init__(self, limit: int, declared: int | None = None) -> None:
        size = f"declares {declared} bytes, over" if declared is not None else "is over"
        super().__init__(f"the request body {size} the limit of {limit} bytes (gateway.request_max_bytes)")


class BadContentLengthError(Exception):
    pass


def declared_length(values: list[str]) -> int | None:
    """The one Content-Length, or None; several different or non-numeric ones are a bad request."""
    if not values:
        return None
    distinct = {v.strip() for v in values}
    if len(distinct) != 1 or not next(iter(distinct)).isdigit() or not next(iter(distinct)).isascii():
        raise BadContentLengthError(f"invalid Content-Length header: {', '.join(values)!r}")
    return int(distinct.pop())


async def read_capped(receive: Receive, limit: int, declared: int | None) -> Receive:
    """Read the whole body (at most `limit` bytes) and return a `receive` that replays it.

    Raises BodyTooLargeError without reading when the declared length is over the cap, or as
    soon as the bytes received pass it.
    """
    if declared is not None and declared > limit:
        raise BodyTooLargeError(limit, declared)
    body = bytearray()
    replay: deque[Message] = deque()
    complete = False
    while True:
        message = await receive()
        if message["type"] != "http.request":
            replay.append(message)  # e.g. http.disconnect: the app sees it after the body
            break
        body.extend(message.get("body", b""))
        if len(body) > limit:
            raise BodyTooLargeError(limit)
        if not message.get("more_body", False):
            complete = True
            break
    # An unfinished body (the client went away) stays unfinished: the app then sees the disconnect.
    replay.appendleft({"type": "http.request", "body": bytes(body), "more_body": not complete})

    async def replaying() -> Message:
        if replay:
            return replay.popleft()
        return await receive()

    return replaying
