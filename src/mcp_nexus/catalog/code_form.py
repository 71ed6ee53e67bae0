"""How code run by `python_sandbox` names a tool: `tools.<namespace>.<tool>(**arguments)`.

One place decides the form, so the stubs the sandbox generates, `find_tools`' answers and the
sandbox tool's description always agree. An exposed name is split at the gateway's namespace
separator; each part becomes a Python identifier (characters outside `[A-Za-z0-9_]` become `_`,
a leading digit or a keyword gets a `_` prefix), since `tools.git-hub.list` is not Python.
`call_tool("<exposed name>", {...})` works for every name, whatever its characters.
"""

from __future__ import annotations

import keyword
import re
from typing import Any

_NOT_IDENTIFIER = re.compile(r"[^A-Za-z0-9_]")
_ARGUMENTS_SHOWN = 4
"""How many argument names the call form shows; more would crowd a search answer."""


def code_identifier(part: str) -> str:
    """`part` as a Python identifier: `git-hub` -> `git_hub`, `2fa` -> `_2fa`, `class` -> `_class`."""
    name = _NOT_IDENTIFIER.sub("_", part) or "_"
    if name[0].isdigit() or keyword.iskeyword(name):
        name = "_" + name
    return name


def code_path(exposed_name: str, separator: str = ".") -> tuple[str, ...]:
    """The attribute path under `tools` for `exposed_name`: ("git", "git_log"), or ("echo",) bare."""
    if separator and separator in exposed_name:
        namespace, tool = exposed_name.split(separator, 1)
        return (code_identifier(namespace), code_identifier(tool))
    return (code_identifier(exposed_name),)


def code_call_form(
    exposed_name: str, input_schema: dict[str, Any] | None = None, separator: str = "."
) -> str:
    """`tools.git.git_log(repo_path=..., max_count=...)`: required arguments first, at most a few."""
    properties = (input_schema or {}).get("properties")
    names: list[str] = []
    if isinstance(properties, dict):
        required = [n for n in (input_schema or {}).get("required") or [] if n in properties]
        names = [*required, *(n for n in properties if n not in required)]
    shown = [f"{name}=..." for name in names[:_ARGUMENTS_SHOWN] if name.isidentifier()]
    if len(names) > _ARGUMENTS_SHOWN:
        shown.append("...")
    return "tools." + ".".join(code_path(exposed_name, separator)) + "(" + ", ".join(shown) + ")"
