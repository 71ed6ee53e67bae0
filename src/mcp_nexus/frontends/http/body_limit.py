"""Read an HTTP request body up to a cap, so an oversized one is refused before it is in memory.

Why here and not per route: every endpoint behind the guard (`/mcp`, `/api/...`) reads its body
whole, so without one cap for all of them a single large POST grows the gateway by its size.
The declared Content-Length is checked first (nothing is read); a chunked or lying body is
counted while it streams and abandoned as soon as it passes the cap.

One cap per request is not enough: 400 connections each sending 4 MiB at once held 1.6 GB.
So every body held also draws on one budget shared by all requests (`BodyBudget`,
gateway.request_body_budget_bytes): a declared length is reserved before anything is read, a
chunked body as it arrives, and a request that finds the budget spent is refused (503) with
nothing more read. What a request reserved is given back when its answer is complete.
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


class BodyBudgetSpentError(Exception):
    def __init__(self, budget: int) -> None:
        super().__init__(
            f"the gateway holds {budget} bytes of request bodies already "
            "(gateway.request_body_budget_bytes): retry shortly"
        )


class BodyBudget:
    """Bytes of request bodies held at once by every request together."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0

    def take(self, size: int) -> bool:
        if self.held + size > self.limit:
            return False
        self.held += size
        return True

    def give(self, size: int) -> None:
        self.held = max(0, self.held - size)


def declared_length(values: list[str]) -> int | None:
    """The one Content-Length, or None; several different or non-numeric ones are a bad request."""
    if not values:
        return None
    distinct = {v.strip() for v in values}
    if len(distinct) != 1 or not next(iter(distinct)).isdigit() or not next(iter(distinct)).isascii():
        raise BadContentLengthError(f"invalid Content-Length header: {', '.join(values)!r}")
    return int(distinct.pop())


class Reservation:
    """What one request drew from the budget; `release()` gives it back (once)."""

    def __init__(self, budget: BodyBudget | None) -> None:
        self.budget = budget
        self.size = 0

    def take(self, size: int) -> None:
        if self.budget is None or size <= 0:
            return
        if not self.budget.take(size):
            self.release()
            raise BodyBudgetSpentError(self.budget.limit)
        self.size += size

    def release(self) -> None:
        if self.budget is not None and self.size:
            self.budget.give(self.size)
        self.size = 0


async def read_capped(
    receive: Receive, limit: int, declared: int | None, reservation: Reservation | None = None
) -> Receive:
    """Read the whole body (at most `limit` bytes) and return a `receive` that replays it.

    Raises BodyTooLargeError without reading when the declared length is over the cap, or as
    soon as the bytes received pass it; BodyBudgetSpentError without reading more when the
    shared budget cannot hold the declared length or the next chunk (the reservation is then
    released).
    """
    if declared is not None and declared > limit:
        raise BodyTooLargeError(limit, declared)
    reservation = reservation or Reservation(None)
    if declared:
        reservation.take(declared)  # before anything is read
    chunks: list[bytes] = []
    received = 0
    replay: deque[Message] = deque()
    complete = False
    try:
        while True:
            message = await receive()
            if message["type"] != "http.request":
                replay.append(message)  # e.g. http.disconnect: the app sees it after the body
                break
            chunk = message.get("body", b"")
            received += len(chunk)
            if received > limit:
                raise BodyTooLargeError(limit)
            if received > reservation.size:  # a chunked body, or one longer than it declared
                reservation.take(received - reservation.size)
            if chunk:
                chunks.append(chunk)
            if not message.get("more_body", False):
                complete = True
                break
    except BaseException:
        reservation.release()
        raise
    # An unfinished body (the client went away) stays unfinished: the app then sees the disconnect.
    body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    chunks.clear()
    replay.appendleft({"type": "http.request", "body": body, "more_body": not complete})

    async def replaying() -> Message:
        if replay:
            return replay.popleft()
        return await receive()

    return replaying
