"""Every HTTP answer a server or its authorization server sends is read up to a bound, counted decoded.

The SDK reads a JSON answer whole (`response.aread()`), and so does its OAuth flow with the
authorization server's metadata, registration and token answers: one hostile answer of a few
gigabytes, or a small gzip body that inflates to them, would be held in the gateway's memory.
An `httpx` response hook (public API: no SDK internals) puts a bounded stream in front of each
answer before anyone reads it:

- answers of the server's MCP endpoint: `limits.message_bytes` (its SSE streams are bounded per
  event by the SDK's `max_sse_event_size`, set to the same limit; a stream as a whole may run for
  hours, so it is not counted);
- every other answer on the same client (the OAuth flow's): `SIDE_ANSWER_BYTES`.

gzip and deflate are inflated here, within the bound (the response then reads as identity, so
httpx does not inflate again); the client asks for nothing else, and an answer in another
encoding is refused. Past the bound, reading raises `AnswerRefused`, an `httpx` stream error:
the SDK turns it into the call's error, naming the limit.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx2

SIDE_ANSWER_BYTES = 1024 * 1024  # an OAuth metadata document or token answer is a few KiB
ACCEPTED_ENCODINGS = "gzip, deflate"  # what the client asks for: both inflate here, bounded
_WBITS = {"gzip": zlib.MAX_WBITS | 16, "x-gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS}


class AnswerRefused(httpx2.StreamError):
    """An answer grew past its bound while being read, or came in an encoding not asked for."""


class BoundedStream(httpx2.AsyncByteStream):
    """`inner`'s bytes, inflated if `encoding` says so, until `limit` bytes: then AnswerRefused."""

    def __init__(self, inner: httpx2.AsyncByteStream, limit: int, what: str, encoding: str | None) -> None:
        self._inner = inner
        self._limit = limit
        self._what = what
        self._encoding = encoding

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._encoding is not None and self._encoding not in _WBITS:
            raise AnswerRefused(
                f"{self._what} came in content-encoding {self._encoding!r}, which was not asked for "
                f"({ACCEPTED_ENCODINGS}); not read"
            )
        inflate = zlib.decompressobj(_WBITS[self._encoding]) if self._encoding is not None else None
        raw_deflate = False  # some servers send deflate without its zlib header
        total = 0
        async for chunk in self._inner:
            if inflate is not None:
                room = self._limit - total + 1  # one byte over the bound is enough to know
                try:
                    data = inflate.decompress(chunk, room)
                except zlib.error:
                    if self._encoding != "deflate" or raw_deflate or total:
                        raise AnswerRefused(f"{self._what}: its {self._encoding} body is corrupt") from None
                    raw_deflate = True
                    inflate = zlib.decompressobj(-zlib.MAX_WBITS)
                    data = inflate.decompress(chunk, room)
            else:
                data = chunk
            total += len(data)
            if total > self._limit:
                raise AnswerRefused(f"{self._what} is larger than {self._limit} bytes; not read further")
            if data:
                yield data

    async def aclose(self) -> None:
        await self._inner.aclose()


def bound_answers(
    endpoint: str | None = None, message_bytes: int = SIDE_ANSWER_BYTES
) -> Callable[[httpx2.Response], Awaitable[None]]:
    """The response hook for a client: its server's MCP `endpoint` may answer up to `message_bytes`,
    every other URL up to SIDE_ANSWER_BYTES (with no endpoint, every answer is such a side answer)."""
    endpoint_url = httpx2.URL(endpoint).copy_with(query=None, fragment=None) if endpoint else None

    async def hook(response: httpx2.Response) -> None:
        headers, stream = response.headers, response.stream
        if not isinstance(stream, httpx2.AsyncByteStream):
            return  # not an async client's: none of ours
        url = response.request.url.copy_with(query=None, fragment=None)
        if endpoint_url is not None and url == endpoint_url:
            if headers.get("content-type", "").lower().startswith("text/event-stream"):
                # The endpoint's event streams are bounded per event by the SDK (max_sse_event_size);
                # anywhere else an "event stream" is read whole (the OAuth flow's aread), so bounded.
                return
            limit, what = message_bytes, f"the server's answer at {endpoint_url} (limits.message_bytes)"
        else:
            limit, what = SIDE_ANSWER_BYTES, f"the answer of {url}"
        encoding = headers.get("content-encoding", "").strip().lower() or None
        if encoding == "identity":
            encoding = None
        if encoding is not None:
            del headers["content-encoding"]  # inflated by the bounded stream, not again by httpx
        response.stream = BoundedStream(stream, limit, what, encoding)

    return hook


# For a client that talks to authorization servers only (OAuth checks, identity providers, token
# exchange): each answer up to SIDE_ANSWER_BYTES. The hook keeps no state: one serves every client.
SIDE_ANSWERS_ONLY: dict[str, list[Callable[[httpx2.Response], Awaitable[None]]]] = {
    "response": [bound_answers()]
}
