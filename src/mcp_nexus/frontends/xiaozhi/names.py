"""Tool names as Xiaozhi endpoints accept them: `[A-Za-z0-9_-]{1,64}`, unique, mapped back on call.

`calc.add` becomes `calc_add`. When two names map to the same string (or are cut to the
same 64 characters), a name that is already valid keeps it and the others get `_` plus a
short hash of their own original name: the result depends only on the set of names, never
on their order, so a tool keeps its name across restarts and list changes.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

MAX_NAME_LENGTH = 64
_INVALID = re.compile(r"[^A-Za-z0-9_-]")
_SUFFIX_HASH_LENGTH = 6


def sanitize(name: str) -> str:
    """Every character outside `[A-Za-z0-9_-]` becomes `_`, cut to 64 characters."""
    cleaned = _INVALID.sub("_", name)[:MAX_NAME_LENGTH]
    return cleaned or "tool"


def _suffixed(base: str, original: str, hash_length: int) -> str:
    digest = hashlib.sha1(original.encode("utf-8")).hexdigest()[:hash_length]
    return f"{base[: MAX_NAME_LENGTH - hash_length - 1]}_{digest}"


@dataclass(frozen=True, slots=True)
class ToolNameMap:
    """Both directions between the gateway's tool names and the names one frontend shows."""

    to_exposed: dict[str, str]
    to_original: dict[str, str]

    @classmethod
    def build(cls, names: Iterable[str]) -> ToolNameMap:
        originals = sorted(set(names))
        groups: dict[str, list[str]] = defaultdict(list)
        for name in originals:
            groups[sanitize(name)].append(name)
        to_exposed: dict[str, str] = {}
        taken: set[str] = set()
        clashing: list[tuple[str, str]] = []
        for candidate, members in groups.items():
            if len(members) == 1:
                to_exposed[members[0]] = candidate
                taken.add(candidate)
                continue
            for name in members:
                if name == candidate:  # already valid: it keeps its own name
                    to_exposed[name] = candidate
                    taken.add(candidate)
                else:
                    clashing.append((candidate, name))
        for candidate, name in clashing:
            hash_length = _SUFFIX_HASH_LENGTH
            exposed = _suffixed(candidate, name, hash_length)
            while exposed in taken:  # astronomically rare: lengthen the hash until it is unique
                hash_length += 2
                exposed = _suffixed(candidate, name, hash_length)
            to_exposed[name] = exposed
            taken.add(exposed)
        return cls(to_exposed, {exposed: name for name, exposed in to_exposed.items()})

    def original(self, exposed: str) -> str:
        """The gateway's name for `exposed`; an unknown name passes through (the gateway reports it)."""
        return self.to_original.get(exposed, exposed)
