"""`${VAR}` and `${VAR:-default}` substitution in every string of a loaded config."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from mcp_nexus.config.errors import ConfigProblem

_PATTERN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def interpolate(
    value: Any,
    env: Mapping[str, str] | None = None,
    path: str = "",
    problems: list[ConfigProblem] | None = None,
) -> Any:
    """Return a copy of `value` with variables replaced; unknown variables are reported in `problems`."""
    env = os.environ if env is None else env
    problems = [] if problems is None else problems
    if isinstance(value, str):

        def substitute(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in env:
                return env[name]
            if default is not None:
                return default
            problems.append(
                ConfigProblem(path, f"environment variable ${{{name}}} is not set (no default given)")
            )
            return match.group(0)

        return _PATTERN.sub(substitute, value)
    if isinstance(value, dict):
        return {k: interpolate(v, env, f"{path}.{k}" if path else str(k), problems) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env, f"{path}[{i}]", problems) for i, v in enumerate(value)]
    return value
