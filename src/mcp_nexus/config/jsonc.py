"""JSON with comments and trailing commas, as VS Code writes `settings.json` and `mcp.json`.

`strip_jsonc` removes `// line` and `/* block */` comments and a comma before `}` or `]`,
outside strings only, keeping every newline (error positions stay right); the result is
plain JSON for `json.loads`.
"""

from __future__ import annotations

import json
import re
from typing import Any

_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def _runs(text: str) -> list[tuple[bool, str]]:
    """`text` cut into (is_string, piece) runs; a piece outside strings may hold comments."""
    runs: list[tuple[bool, str]] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            runs.append((True, text[i : end + 1]))
            i = end + 1
            continue
        end = text.find('"', i)
        end = n if end < 0 else end
        runs.append((False, text[i:end]))
        i = end
    return runs


def _without_comments(text: str) -> str:
    """One pass, character by character: a `//` or `/*` inside a string is text, a `"` inside a comment too."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[i : end + 1])
            i = end + 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            stop = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, stop))
            i = stop
        else:
            out.append(char)
            i += 1
    return "".join(out)


def strip_jsonc(text: str) -> str:
    """Plain JSON: comments gone (their newlines kept), then trailing commas."""
    return "".join(
        piece if is_string else _TRAILING_COMMA.sub(r"\1", piece)
        for is_string, piece in _runs(_without_comments(text))
    )


def loads_jsonc(text: str) -> Any:
    """`json.loads` of `text`, comments and trailing commas allowed (json.JSONDecodeError otherwise)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return json.loads(strip_jsonc(text))
