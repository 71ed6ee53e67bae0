"""Strict checks on every value that reaches the store from outside.

Ids, categories and predicates end up in file paths or URIs, so they are held to small
ASCII patterns and checked with `re.fullmatch` (a `$` anchor would accept a trailing
newline). The checks run in a fixed order so the error names the first real problem:
a Cyrillic `а` is reported as a non-ASCII look-alike, not as a pattern mismatch.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from mcp_nexus.builtin.cortex.errors import InvalidInputError

MAX_ID_LENGTH = 64
MAX_CATEGORY_LENGTH = 32
MAX_PREDICATE_LENGTH = 64
MAX_TYPE_LENGTH = 64
MAX_NAME_LENGTH = 200
MAX_DESC_LENGTH = 10_000
MAX_CONTEXT_LENGTH = 2_000
MAX_OBSERVATION_LENGTH = 10_000
MAX_TAGS = 32
MAX_TAG_LENGTH = 64

# Published in the tools' input schemas; the same rules are enforced below.
ID_PATTERN = r"^[a-z0-9][a-z0-9-]*$"
CATEGORY_PATTERN = r"^[a-z][a-z0-9_]*$"
PREDICATE_PATTERN = r"^[a-z][a-z0-9_]*$"  # the stored form
# What `connect_entities` accepts, turned into the stored form by `normalize_predicate`.
PREDICATE_INPUT_PATTERN = r"^[A-Za-z][A-Za-z0-9 _-]*$"
TYPE_PATTERN = r"^[a-z][a-z0-9_-]*$"

_ID_RE = re.compile(r"[a-z0-9][a-z0-9-]*")
ID_REGEX = _ID_RE  # for hot loops that inline check_id's fast path (then call it to name a problem)
_CATEGORY_RE = re.compile(r"[a-z][a-z0-9_]*")
_PREDICATE_RE = re.compile(r"[a-z][a-z0-9_]*")
_TYPE_RE = re.compile(r"[a-z][a-z0-9_-]*")
_PREDICATE_INPUT_RE = re.compile(r"[A-Za-z][A-Za-z0-9 _-]*")
_CAMEL_CASE_BOUNDARY_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_PREDICATE_SEPARATORS_RE = re.compile(r"[ _-]+")

# C0/C1 controls, and the bidirectional overrides that make text display differently
# from what it is ("Trojan Source"). Newlines and tabs are allowed in long text only.
_BIDI = "\u202a-\u202e\u2066-\u2069\u200e\u200f"
_CONTROL_IN_LINE_RE = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}]")
_CONTROL_IN_TEXT_RE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")


def _describe_char(char: str) -> str:
    name = unicodedata.name(char, "unnamed character")
    return f"{char!r} (U+{ord(char):04X} {name})"


def _check_slug(value: Any, what: str, compiled: re.Pattern[str], max_length: int, allowed: str) -> str:
    # Fast path (loading 400,000 records checks a million values): the patterns' classes are
    # ASCII-only, so a full match already rules out look-alikes, dots and separators.
    if type(value) is str and len(value) <= max_length and compiled.fullmatch(value) is not None:
        return value
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, got {type(value).__name__}")
    if not value:
        raise InvalidInputError(f"{what} is empty")
    if len(value) > max_length:
        raise InvalidInputError(f"{what} is {len(value)} characters long; the limit is {max_length}")
    for char in value:
        if not char.isascii():
            raise InvalidInputError(
                f"{what} {value!r} contains the non-ASCII character {_describe_char(char)}; "
                f"look-alike letters are refused (allowed: {allowed})"
            )
    if "/" in value or "\\" in value:
        raise InvalidInputError(f"{what} {value!r} contains a path separator (allowed: {allowed})")
    if "." in value:
        raise InvalidInputError(f"{what} {value!r} contains a dot (allowed: {allowed})")
    if compiled.fullmatch(value) is None:
        raise InvalidInputError(f"{what} {value!r} is not valid (allowed: {allowed})")
    return value


def check_id(value: Any, what: str = "id") -> str:
    """A kebab-case slug: lowercase ASCII letters, digits and '-', starting with a letter or digit."""
    return _check_slug(
        value, what, _ID_RE, MAX_ID_LENGTH, "lowercase a-z, 0-9 and '-' (not first), e.g. 'fast-api'"
    )


def check_category_name(value: Any) -> str:
    """A category name (also a file name): lowercase letters, digits and '_'."""
    return _check_slug(
        value,
        "category",
        _CATEGORY_RE,
        MAX_CATEGORY_LENGTH,
        "lowercase a-z, 0-9 and '_' (starting with a letter), e.g. 'tech_stack'",
    )


def check_category(value: Any, categories: Sequence[str]) -> str:
    """A category name that is one of the configured categories."""
    category = check_category_name(value)
    if category not in categories:
        raise InvalidInputError(f"unknown category {category!r}; expected one of {', '.join(categories)}")
    return category


def check_predicate(value: Any) -> str:
    """A relation predicate in its stored form, such as `uses` or `depends_on`."""
    return _check_slug(
        value,
        "rel",
        _PREDICATE_RE,
        MAX_PREDICATE_LENGTH,
        "lowercase a-z, 0-9 and '_' (starting with a letter), e.g. 'depends_on'",
    )


def normalize_predicate(value: Any) -> str:
    """A predicate as a caller may spell it, in its stored snake_case form.

    `depends-on`, `depends on`, `Depends_On`, `DEPENDS-ON` and `dependsOn` all become
    `depends_on`: letters, digits, spaces, '-' and '_' starting with a letter
    (`PREDICATE_INPUT_PATTERN`), camelCase split into words, words joined by one '_'.
    Anything else (a dot, a slash, a non-ASCII look-alike, a leading digit) is refused
    with the same reasons as `check_predicate`.
    """
    spelled = _check_slug(
        value,
        "rel",
        _PREDICATE_INPUT_RE,
        MAX_PREDICATE_LENGTH,
        "letters, digits, spaces, '-' and '_', starting with a letter, e.g. 'depends_on' or 'depends-on'",
    )
    words = _CAMEL_CASE_BOUNDARY_RE.sub("_", spelled)
    stored = _PREDICATE_SEPARATORS_RE.sub("_", words).strip("_").lower()
    if len(stored) > MAX_PREDICATE_LENGTH:  # camelCase gains a '_' per word
        raise InvalidInputError(
            f"rel {spelled!r} is stored as {len(stored)} characters; the limit is {MAX_PREDICATE_LENGTH}"
        )
    return check_predicate(stored)


def check_type(value: Any) -> str:
    """An entity type such as `concept` or `framework`."""
    return _check_slug(
        value,
        "type",
        _TYPE_RE,
        MAX_TYPE_LENGTH,
        "lowercase a-z, 0-9, '_' and '-' (starting with a letter), e.g. 'framework'",
    )


def check_line(value: Any, what: str, max_length: int, *, required: bool = True) -> str:
    """One line of human text (a name, a tag): no control characters, bounded."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, got {type(value).__name__}")
    text = value.strip()
    if required and not text:
        raise InvalidInputError(f"{what} is empty")
    if len(text) > max_length:
        raise InvalidInputError(f"{what} is {len(text)} characters long; the limit is {max_length}")
    bad = _CONTROL_IN_LINE_RE.search(text)
    if bad:
        raise InvalidInputError(f"{what} contains the control character {_describe_char(bad.group())}")
    return text


def check_text(value: Any, what: str, max_length: int, *, required: bool = True) -> str:
    """Free text (a description, an observation): newlines and tabs allowed, other controls not."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, got {type(value).__name__}")
    text = value.strip()
    if required and not text:
        raise InvalidInputError(f"{what} is empty")
    if len(text) > max_length:
        raise InvalidInputError(f"{what} is {len(text)} characters long; the limit is {max_length}")
    bad = _CONTROL_IN_TEXT_RE.search(text)
    if bad:
        raise InvalidInputError(f"{what} contains the control character {_describe_char(bad.group())}")
    return text


def check_tags(value: Any) -> list[str]:
    """A short list of short tags; repeated tags are kept once, in first-seen order."""
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise InvalidInputError(f"tags must be a list of strings, got {type(value).__name__}")
    if len(value) > MAX_TAGS:
        raise InvalidInputError(f"{len(value)} tags given; the limit is {MAX_TAGS}")
    tags: list[str] = []
    for index, tag in enumerate(value):
        checked = check_line(tag, f"tags[{index}]", MAX_TAG_LENGTH)
        if checked not in tags:
            tags.append(checked)
    return tags


def check_year_month(year: Any, month: Any) -> tuple[str, str]:
    """A four-digit year and a two-digit month (01-12), as they appear in relation file paths."""
    if not isinstance(year, str) or re.fullmatch(r"[0-9]{4}", year, flags=re.ASCII) is None:
        raise InvalidInputError(f"year {year!r} is not valid: use four digits, e.g. '2026'")
    if not isinstance(month, str) or re.fullmatch(r"0[1-9]|1[0-2]", month, flags=re.ASCII) is None:
        raise InvalidInputError(f"month {month!r} is not valid: use two digits 01-12, e.g. '02'")
    return year, month
