"""Cache keys: the exposed tool name plus a stable hash of the arguments' canonical JSON.

Canonical: keys sorted, no whitespace, non-ASCII kept as is; so `{"a": 1, "b": 2}` and
`{"b": 2, "a": 1}` share a key, while values that only look alike when naively joined
(`{"a": "1,b=2"}` vs `{"a": "1", "b": "2"}`) stay apart: JSON quotes and escapes every string.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(arguments: dict[str, Any]) -> str:
    """Raises TypeError/ValueError for values JSON cannot express (such calls are not cached)."""
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def cache_key(tool: str, arguments: dict[str, Any], scope: str | None = None) -> str:
    """`scope` (a caller's identity, for private results) makes the key that caller's alone."""
    text = canonical_json(arguments) if scope is None else f"{canonical_json(arguments)}\x00{scope}"
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    # The name is kept readable (for clearing and debugging); NUL cannot occur in a tool name.
    return f"{tool}\x00{digest}"
