"""The argument templates of a chain's steps: `{{ input.city }}`, `{{ steps.log.0.hash }}`.

One small form, read as data and never evaluated (no expressions, filters or calls):

- a placeholder is `{{ path }}`; a path is `input` or `steps.<id>`, then `.key` or `.N`
  segments (a digit segment indexes a list, or is a key of an object);
- a string that is exactly one placeholder becomes the value itself, of any JSON type
  (`"{{ input.limit }}"` passes the number 5, not the text "5");
- a placeholder inside other text is replaced by the value's text (a string as is,
  anything else as compact JSON);
- an argument whose whole value is `{{ input.<key> }}` is left out when the caller did not
  give that key, so the tool's own default applies; any other missing value is an error;
- templates are walked through objects and lists; other values are kept as written.

Placeholders are parsed when the config loads (`placeholders`), so a typo or a reference to
a later step is a config error, not a surprise at the first call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

PLACEHOLDER = re.compile(r"\{\{([^{}]*)\}\}")
_SEGMENT = re.compile(r"[A-Za-z0-9_-]+")
ROOTS = ("input", "steps")


class TemplateError(ValueError):
    """A template that cannot be read (at load) or filled (at a call); the message says where and why."""


@dataclass(frozen=True, slots=True)
class TemplatePath:
    """A parsed placeholder path: `steps.log.0.hash` is root "steps", segments ("log", "0", "hash")."""

    root: str
    segments: tuple[str, ...]

    @property
    def text(self) -> str:
        return ".".join((self.root, *self.segments))

    @property
    def step(self) -> str | None:
        """The id of the step this path reads, None for `input`."""
        return self.segments[0] if self.root == "steps" and self.segments else None


def parse_path(raw: str) -> TemplatePath:
    """The path inside `{{ ... }}`; TemplateError naming what is wrong with it."""
    text = raw.strip()
    if not text:
        raise TemplateError("empty placeholder '{{ }}': write a path such as {{ input.city }}")
    parts = text.split(".")
    if not all(_SEGMENT.fullmatch(part) for part in parts):
        raise TemplateError(
            f"'{{{{ {text} }}}}' is not a path: use letters, digits, '_' and '-' between dots, "
            "e.g. {{ input.city }} or {{ steps.log.0.hash }} (no expressions)"
        )
    root, segments = parts[0], tuple(parts[1:])
    if root not in ROOTS:
        raise TemplateError(f"'{{{{ {text} }}}}' must start with 'input' or 'steps', not {root!r}")
    if root == "steps" and not segments:
        raise TemplateError(f"'{{{{ {text} }}}}' must name a step: {{{{ steps.<id> }}}}")
    return TemplatePath(root, segments)


def placeholders(template: Any) -> Iterator[tuple[str, TemplatePath]]:
    """Every placeholder in `template` as (where, path): `where` is the JSON path of the string holding it."""
    yield from _walk(template, "")


def _walk(value: Any, where: str) -> Iterator[tuple[str, TemplatePath]]:
    if isinstance(value, str):
        if "{{" in value or "}}" in value:
            found = PLACEHOLDER.findall(value)
            rest = PLACEHOLDER.sub("", value)
            if "{{" in rest or "}}" in rest:
                raise TemplateError(f"{where or 'value'}: unmatched '{{{{' or '}}}}' in {value!r}")
            for raw in found:
                try:
                    yield where, parse_path(raw)
                except TemplateError as exc:
                    raise TemplateError(f"{where or 'value'}: {exc}") from None
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _walk(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, f"{where}[{index}]")


class _LeftOut:
    """The value of `{{ input.<key> }}` for a key the caller did not give (the argument is dropped)."""


LEFT_OUT = _LeftOut()


def render(template: Any, scope: Mapping[str, Any]) -> Any:
    """`template` filled from `scope` ({"input": ..., "steps": {id: value}}); TemplateError when a value is missing."""
    return _render(template, scope, "")


def _render(value: Any, scope: Mapping[str, Any], where: str) -> Any:
    if isinstance(value, str):
        if "{{" not in value:
            return value
        whole = PLACEHOLDER.fullmatch(value)
        if whole is not None:
            return _lookup(parse_path(whole.group(1)), scope, where, optional=True)
        return PLACEHOLDER.sub(lambda m: _as_text(_lookup(parse_path(m.group(1)), scope, where)), value)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            filled = _render(item, scope, f"{where}.{key}" if where else str(key))
            if filled is not LEFT_OUT:
                out[key] = filled
        return out
    if isinstance(value, list):
        items = [_render(item, scope, f"{where}[{i}]") for i, item in enumerate(value)]
        return [None if item is LEFT_OUT else item for item in items]
    return value


def _lookup(path: TemplatePath, scope: Mapping[str, Any], where: str, *, optional: bool = False) -> Any:
    current: Any = scope.get(path.root)
    walked = path.root
    for segment in path.segments:
        found, current = _step_into(current, segment)
        if not found:
            if optional and path.root == "input" and walked == "input":
                return LEFT_OUT  # an optional input the caller left out: so is the argument
            raise TemplateError(
                f"{where or 'result'}: {{{{ {path.text} }}}}: {_missing(walked, current, segment)}"
            )
        walked = f"{walked}.{segment}"
    return current


def _step_into(value: Any, segment: str) -> tuple[bool, Any]:
    if isinstance(value, Mapping):
        return (True, value[segment]) if segment in value else (False, value)
    if isinstance(value, list) and segment.isdigit():
        index = int(segment)
        return (True, value[index]) if index < len(value) else (False, value)
    return False, value


def _missing(walked: str, value: Any, segment: str) -> str:
    if isinstance(value, Mapping):
        keys = ", ".join(sorted(map(str, value))[:10]) or "none"
        return f"{walked} has no key {segment!r} (its keys: {keys})"
    if isinstance(value, list):
        return f"{walked} has no item {segment} (a list of {len(value)} items)"
    return f"{walked} is {_kind(value)}, not an object or a list: it has no {segment!r}"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return "a text"
    return f"a {type(value).__name__}"


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is LEFT_OUT:
        return ""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
