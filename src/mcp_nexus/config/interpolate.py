"""`${VAR}` and `${VAR:-default}` substitution in every string of a loaded config.

What was substituted is remembered (`Interpolated`): people put secrets in the environment
precisely so they never sit in the file, so `nexus config check` masks every value that
came from a variable and the secret redactor treats them as secrets.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp_nexus.config.errors import ConfigProblem

_PATTERN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass
class Interpolated:
    """The strings `${VAR}` substitution produced."""

    fields: set[str] = field(default_factory=set)  # whole resulting strings, e.g. "Bearer s3cr3t"
    parts: set[str] = field(default_factory=set)  # what replaced each `${VAR}`, e.g. "s3cr3t"

    @property
    def values(self) -> frozenset[str]:
        return frozenset(self.fields | self.parts)


def interpolate(
    value: Any,
    env: Mapping[str, str] | None = None,
    path: str = "",
    problems: list[ConfigProblem] | None = None,
    found: Interpolated | None = None,
) -> Any:
    """Return a copy of `value` with variables replaced; unknown variables are reported in `problems`.

    Every substitution is recorded in `found` when given.
    """
    env = os.environ if env is None else env
    problems = [] if problems is None else problems
    if isinstance(value, str):
        substituted: list[str] = []

        def substitute(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in env:
                substituted.append(env[name])
                return env[name]
            if default is not None:
                substituted.append(default)
                return default
            problems.append(
                ConfigProblem(path, f"environment variable ${{{name}}} is not set (no default given)")
            )
            return match.group(0)

        result = _PATTERN.sub(substitute, value)
        if found is not None and substituted:
            if result:
                found.fields.add(result)
            found.parts.update(part for part in substituted if part)
        return result
    if isinstance(value, dict):
        return {
            k: interpolate(v, env, f"{path}.{k}" if path else str(k), problems, found)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [interpolate(v, env, f"{path}[{i}]", problems, found) for i, v in enumerate(value)]
    return value
