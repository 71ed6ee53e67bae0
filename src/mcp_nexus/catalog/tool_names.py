"""Which upstream tool names Nexus accepts, and how any name is shown without driving a terminal.

The MCP spec (2025-11-25, "Tool names"; SEP-986, `mcp.shared.tool_name_validation` in the SDK)
says 1 to 128 characters from A-Z a-z 0-9 `_` `-` `.`. Servers in the wild use more (other
scripts, `/`), so Nexus splits the rule in two:

- refused, always: an empty name, more than 128 characters, or any control, format,
  surrogate, private-use, unassigned or whitespace character (Unicode categories C* and Z*:
  NUL, ESC, newline, U+202E, zero-width joiners and spaces). Such a name cannot be typed
  back, shown or logged safely;
- kept with a warning: any other name outside the spec's ASCII set (e.g. CJK letters).
"""

from __future__ import annotations

import re
import unicodedata

MAX_NAME_CHARS = 128
SPEC_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
"""The spec's tool-name rule (the SDK's `TOOL_NAME_REGEX`)."""

_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"})
_KINDS = {
    "Cc": "a control character",
    "Cf": "a format character",
    "Cs": "a lone surrogate",
    "Co": "a private-use character",
    "Cn": "an unassigned character",
    "Zs": "whitespace",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
}
SHOWN_CHARS = 80
"""How much of a long name `printable` shows."""


def _unsafe(char: str) -> bool:
    return unicodedata.category(char) in _UNSAFE_CATEGORIES


def _code(char: str) -> str:
    point = ord(char)
    if point <= 0xFF:
        return f"\\x{point:02x}"
    if point <= 0xFFFF:
        return f"\\u{point:04x}"
    return f"\\U{point:08x}"


def name_problem(name: object) -> str | None:
    """Why a tool name is refused outright; None when it may be exposed."""
    if not isinstance(name, str) or not name:
        return "the name is empty"
    if len(name) > MAX_NAME_CHARS:
        return f"the name is {len(name)} characters long (at most {MAX_NAME_CHARS})"
    if SPEC_NAME.fullmatch(name):
        return None
    for char in name:
        if _unsafe(char):
            return f"the name holds {_KINDS[unicodedata.category(char)]} ({_code(char)})"
    return None


def name_warning(name: str) -> str | None:
    """Why an accepted name is outside the spec's characters (kept, but clients may choke); None when it is not."""
    if SPEC_NAME.fullmatch(name):
        return None
    odd = "".join(dict.fromkeys(c for c in name if not SPEC_NAME.fullmatch(c)))
    return f"characters outside the MCP spec's A-Z a-z 0-9 _ - . ({odd!r})"


def printable(name: str, limit: int = SHOWN_CHARS) -> str:
    """`name` safe to print anywhere: unsafe characters as `\\xNN`/`\\uNNNN`, cut to `limit` characters.

    Use it for every name an upstream chose before it reaches a terminal, a log line or a
    label: a refused name is only ever shown this way.
    """
    shown = name if len(name) <= limit else name[:limit]
    if not SPEC_NAME.fullmatch(shown):
        shown = "".join(_code(c) if _unsafe(c) else c for c in shown)
    if len(name) > limit:
        shown += f"... ({len(name)} characters)"
    return shown
