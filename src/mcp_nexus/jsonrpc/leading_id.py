"""The id of a JSON-RPC message from its first bytes, for a message too large to be parsed.

A line over the size limit is dropped unparsed (jsonrpc/lines.py); its request, or the request it
answers, would then wait for a timeout that names the wrong cause. Writers put the short members
first (the MCP SDKs for Python: `jsonrpc`, `id`, then `result`/`error`, or `method` and `params`),
so the id can be read from the line's first bytes without parsing the rest: the members are read
in order while their values are short scalars, up to the first that is not (the large one).

Only what those members prove is taken: an answer is an id followed by `result` or `error` with no
`method`, a request an id beside a `method`. A server's own request is not an answer to ours, and
an `"id"` inside `params` is never read: failing another call by mistake would be worse than
letting this one reach its timeout.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mcp_types import RequestId

# One member whose value is a short scalar (group 2), or whose value is something else (group 2
# absent: an object, an array, a long string, a number that is not a whole one).
_MEMBER = re.compile(
    rb'\s*"([A-Za-z]{1,16})"\s*:\s*'
    rb'(-?\d{1,19}(?![.\deE])|"(?:[^"\\\x00-\x1f]|\\.){0,256}"(?=\s*[,}])|null|true|false)?'
)


def _leading_members(prefix: bytes) -> tuple[dict[str, Any], str | None]:
    """The short members at the start of the object, and the name of the first member that is not one."""
    start = prefix.lstrip()
    if not start.startswith(b"{"):
        return {}, None
    seen: dict[str, Any] = {}
    position = 1
    while True:
        member = _MEMBER.match(start, position)
        if member is None:
            return seen, None
        name = member.group(1).decode()
        if member.group(2) is None:
            return seen, name
        seen[name] = json.loads(member.group(2))
        position = member.end()
        rest = start[position:].lstrip()
        if not rest.startswith(b","):
            return seen, None
        position = len(start) - len(rest) + 1


def _as_id(value: Any) -> RequestId | None:
    return value if isinstance(value, int | str) and not isinstance(value, bool) else None


def answered_id(prefix: bytes) -> RequestId | None:
    """The id of the request the message starting with `prefix` answers, or None."""
    seen, large = _leading_members(prefix)
    if "method" in seen or large not in ("result", "error"):
        return None
    return _as_id(seen.get("id"))


def request_id(prefix: bytes) -> RequestId | None:
    """The id of the request starting with `prefix`, or None (a notification, or unknown)."""
    seen, _large = _leading_members(prefix)
    if not isinstance(seen.get("method"), str):
        return None
    return _as_id(seen.get("id"))
