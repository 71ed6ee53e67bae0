"""Hidden instructions in a tool's definition: what a model would read that an operator would not expect.

A tool description is read by the model as trusted text. A hostile server hides orders in
it ("tool poisoning"): characters nobody sees, `<IMPORTANT>` blocks, "ignore previous
instructions", or asks for secret files to be read and sent along. This scans every text
of a definition (title, description, and each `description`/`title` inside its schemas)
and names what it found and where.

False positives cost an operator's trust in the whole feature, so each rule needs a
strong sign, not just a word: a path like `.env` alone is an ordinary thing for a tool to
mention; `.env` with "send"/"pass"/"contents of" is not. tests/integrity keeps a table of
benign descriptions that must stay unflagged.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

MAX_EXCERPT = 80


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str  # hidden_characters | override_instructions | instruction_block | sensitive_file | exfiltration
    where: str  # "description", "inputSchema.properties.path.description", ...
    excerpt: str  # what matched, printable (invisible characters shown as U+XXXX)

    def as_json(self) -> dict[str, str]:
        return {"kind": self.kind, "where": self.where, "excerpt": self.excerpt}

    def __str__(self) -> str:
        return f"{self.kind} in {self.where}: {self.excerpt!r}"


# Unicode tag characters (U+E0000-U+E007F) spell ASCII invisibly; bidi overrides and isolates
# reorder what is shown; these zero-width characters have no place in prose.
_TAGS = re.compile("[\U000e0000-\U000e007f]")
_BIDI_AND_INVISIBLE = re.compile("[\u202a-\u202e\u2066-\u2069\u200b\u2060-\u2064\u180e\ufeff\u00ad]")
# ZWJ and ZWNJ are legitimate between non-ASCII letters or symbols (emoji sequences, Persian,
# Indic scripts); next to ASCII they only hide things.
_JOINERS = re.compile("[\u200c\u200d]")

_OVERRIDE = re.compile(
    r"\b(?:ignore|disregard|forget)\b[^.\n]{0,40}?\b(?:previous|prior|above|earlier|preceding|all|any|other|"
    r"system)\b[^.\n]{0,30}?\b(?:instructions?|prompts?|directions|guidelines|directives)\b"
    r"|\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|mention\s+(?:this|it)\s+to|notify|alert|reveal\s+(?:this|it)"
    r"\s+to)\s+the\s+user\b"
    r"|\bwithout\s+(?:telling|informing|notifying|alerting)\s+the\s+user\b"
    r"|\bthe\s+user\s+(?:must|should)\s+(?:not|never)\s+(?:know|see|be\s+told)\b",
    re.IGNORECASE,
)
_BLOCK = re.compile(
    r"<\s*/?\s*(?:important|system|instructions?|secret|hidden|admin)\b[^>]{0,40}>", re.IGNORECASE
)
_SECRET_PATH = re.compile(
    r"~/\.ssh\b|\.ssh/|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|/etc/(?:passwd|shadow)\b|\.aws/credentials\b"
    r"|(?<![\w.-])\.env\b|\.netrc\b|\.git-credentials\b|\bmcp\.json\b|\.npmrc\b|\.pypirc\b",
    re.IGNORECASE,
)
_EXFIL_HINT = re.compile(
    r"\b(?:send|upload|post|forward|pass|include|append|attach|transmit|exfiltrate|embed)\b"
    r"|\bcontents?\b|\bas\s+(?:a|an|the)\s+(?:parameter|argument|sidenote)\b",
    re.IGNORECASE,
)
_SEND_AWAY = re.compile(
    r"\b(?:send|post|upload|forward|transmit|exfiltrate|copy|leak)\b[^.\n]{0,80}?"
    r"\b(?:conversation|chat\s+history|secrets?|tokens?|credentials?|passwords?|api[\s_-]?keys?|private\s+keys?"
    r"|environment\s+variables?|file\s+contents?|system\s+prompt)\b[^.\n]{0,60}?"
    r"(?:https?://|\b[\w.+-]+@[\w-]+\.[\w.]+)",
    re.IGNORECASE,
)


def texts(pinned: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, text) for every text a model reads in a definition."""
    for field in ("title", "description"):
        value = pinned.get(field)
        if isinstance(value, str):
            yield field, value
    for field in ("inputSchema", "outputSchema"):
        yield from _schema_texts(field, pinned.get(field), depth=0)
    annotations = pinned.get("annotations")
    if isinstance(annotations, dict) and isinstance(annotations.get("title"), str):
        yield "annotations.title", annotations["title"]


def _schema_texts(where: str, schema: Any, depth: int) -> Iterator[tuple[str, str]]:
    if depth > 16:  # a hostile schema may nest without end
        return
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in ("description", "title") and isinstance(value, str):
                yield f"{where}.{key}", value
            elif isinstance(value, (dict, list)):
                yield from _schema_texts(f"{where}.{key}", value, depth + 1)
    elif isinstance(schema, list):
        for index, item in enumerate(schema):
            yield from _schema_texts(f"{where}[{index}]", item, depth + 1)


def scan(pinned: dict[str, Any]) -> list[Finding]:
    """Everything suspicious in a definition (empty when it reads as an ordinary tool)."""
    findings: list[Finding] = []
    for where, text in texts(pinned):
        findings.extend(scan_text(where, text))
    return findings


def scan_text(where: str, text: str) -> list[Finding]:
    found: list[Finding] = []
    hidden = [m.group() for m in _TAGS.finditer(text)]
    hidden += [m.group() for m in _BIDI_AND_INVISIBLE.finditer(text)]
    hidden += [m.group() for m in _JOINERS.finditer(text) if _joins_ascii(text, m.start())]
    if hidden:
        found.append(Finding("hidden_characters", where, _show_hidden(text, hidden)))
    # Tag characters spell ASCII: read what they say, so the other rules see it too.
    revealed = _reveal_tags(text)
    for kind, pattern in (("override_instructions", _OVERRIDE), ("instruction_block", _BLOCK)):
        match = pattern.search(revealed)
        if match:
            found.append(Finding(kind, where, _excerpt(match.group())))
    path = _SECRET_PATH.search(revealed)
    if path and _EXFIL_HINT.search(revealed):
        found.append(Finding("sensitive_file", where, _excerpt(path.group())))
    away = _SEND_AWAY.search(revealed)
    if away:
        found.append(Finding("exfiltration", where, _excerpt(away.group())))
    return found


def _joins_ascii(text: str, at: int) -> bool:
    before = text[at - 1] if at > 0 else " "
    after = text[at + 1] if at + 1 < len(text) else " "
    return before.isascii() or after.isascii()


def _reveal_tags(text: str) -> str:
    return "".join(chr(ord(c) - 0xE0000) if 0xE0020 <= ord(c) <= 0xE007E else c for c in text)


def _show_hidden(text: str, hidden: list[str]) -> str:
    names = sorted({f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}" for c in hidden})
    tags = "".join(chr(ord(c) - 0xE0000) for c in text if 0xE0020 <= ord(c) <= 0xE007E)
    shown = f"{len(hidden)} invisible: {', '.join(names[:3])}"
    return _excerpt(f"tags spell {tags!r}; {shown}" if tags else shown, MAX_EXCERPT * 2)


def _excerpt(text: str, limit: int = MAX_EXCERPT) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
