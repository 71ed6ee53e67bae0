"""Variable substitution in every string of a loaded config.

Accepted in every format (docs/CONFIG.md, "Variables"):

- `${VAR}`, `${VAR:-default}`: an environment variable (Claude Desktop, Claude Code, Nexus);
- `${env:VAR}` (also `${env:VAR:-default}`): the same, as VS Code and Cursor write it;
- `${userHome}`, `${workspaceFolder}`, `${workspaceFolderBasename}`, `${pathSeparator}`, `${/}`:
  VS Code's and Cursor's predefined variables;
- `${input:ID}`: a VS Code input. A gateway cannot prompt, so its value comes from the
  environment variable `NEXUS_INPUT_<ID>` (`input_env_name`), or from the file named by
  `NEXUS_INPUT_<ID>_FILE`, or else from the input's own `default`.

What was substituted is remembered (`Interpolated`): people put secrets in the environment
precisely so they never sit in the file, so `nexus config check` masks every value that
came from a variable and the secret redactor treats them as secrets.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_nexus.config.errors import ConfigProblem

_PATTERN = re.compile(
    r"\$\{(?:"
    r"(?P<env>env:)?(?P<var>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^}]*))?"
    r"|input:(?P<input>[^}]+)"
    r"|(?P<editor>(?:command|config):[^}]*)"
    r"|(?P<sep>/)"
    r")\}"
)

INPUT_ENV_PREFIX = "NEXUS_INPUT_"
INPUT_TYPES = ("promptString", "pickString", "command")


def input_env_name(input_id: str) -> str:
    """The environment variable holding a VS Code input's value: `api-key` -> `NEXUS_INPUT_API_KEY`."""
    return INPUT_ENV_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", input_id).upper()


@dataclass(frozen=True)
class InputSpec:
    """One entry of a VS Code `inputs` list: what a prompt would have asked for."""

    id: str
    description: str = ""
    default: str | None = None
    options: tuple[str, ...] = ()  # pickString: the accepted values


def workspace_folder(config_path: Path | None) -> Path:
    """`${workspaceFolder}`: the folder holding `.vscode/` or `.cursor/` for a file inside one, else the file's folder."""
    if config_path is None:
        return Path.cwd()
    folder = config_path.resolve().parent
    return folder.parent if folder.name in (".vscode", ".cursor") else folder


@dataclass
class Variables:
    """Where every kind of `${...}` gets its value."""

    env: Mapping[str, str]
    workspace: Path = field(default_factory=Path.cwd)
    inputs: dict[str, InputSpec] = field(default_factory=dict)

    def predefined(self) -> dict[str, str]:
        return {
            "userHome": str(Path.home()),
            "workspaceFolder": str(self.workspace),
            "workspaceFolderBasename": self.workspace.name,
            "pathSeparator": os.sep,
        }


def _option_value(option: Any) -> str | None:
    if isinstance(option, dict):
        option = option.get("value")
    return option if isinstance(option, str) else None


def parse_inputs(raw: Any, problems: list[ConfigProblem]) -> dict[str, InputSpec]:
    """VS Code's top-level `inputs` list, checked: each needs a string `id` and a known `type`."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        problems.append(ConfigProblem("inputs", "expected a list of {type, id, description} objects"))
        return {}
    inputs: dict[str, InputSpec] = {}
    for index, entry in enumerate(raw):
        path = f"inputs[{index}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str) or not entry["id"]:
            problems.append(ConfigProblem(f"{path}.id", "each input needs a non-empty string 'id'"))
            continue
        kind = entry.get("type", "promptString")
        if kind not in INPUT_TYPES:
            expected = ", ".join(repr(t) for t in INPUT_TYPES)
            problems.append(ConfigProblem(f"{path}.type", f"expected one of {expected}, got {kind!r}"))
            continue
        if entry["id"] in inputs:
            problems.append(ConfigProblem(f"{path}.id", f"duplicate input id {entry['id']!r}"))
            continue
        default = entry.get("default")
        options = entry.get("options") if kind == "pickString" else None
        inputs[entry["id"]] = InputSpec(
            id=entry["id"],
            description=str(entry.get("description") or ""),
            default=default if isinstance(default, str) and kind != "command" else None,
            options=tuple(v for v in map(_option_value, options or ()) if v is not None),
        )
    return inputs


def _input_value(input_id: str, variables: Variables, path: str, problems: list[ConfigProblem]) -> str | None:
    spec = variables.inputs.get(input_id)
    name = input_env_name(input_id)
    value = variables.env.get(name)
    if value is None and f"{name}_FILE" in variables.env:
        file = variables.env[f"{name}_FILE"]
        try:
            value = Path(file).read_text(encoding="utf-8").rstrip("\r\n")
        except OSError as exc:
            problems.append(
                ConfigProblem(
                    path, f"input {input_id!r}: cannot read {name}_FILE ({file}): {exc.strerror or exc}"
                )
            )
            return None
    if value is None and spec is not None:
        value = spec.default
    if value is None:
        what = f"input {input_id!r}"
        if spec is None:
            what += " (not declared in 'inputs')"
        elif spec.description:
            what += f" ({spec.description!r})"
        problems.append(
            ConfigProblem(
                path,
                f"{what} has no value and a gateway cannot prompt for it: "
                f"set {name} (or {name}_FILE to a file holding it)",
            )
        )
        return None
    if spec is not None and spec.options and value not in spec.options:
        # Never repeat the value: it came from the environment and may be a secret.
        choices = ", ".join(repr(o) for o in spec.options)
        problems.append(ConfigProblem(path, f"input {input_id!r}: {name} must be one of {choices}"))
        return None
    return value


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
    env: Mapping[str, str] | Variables | None = None,
    path: str = "",
    problems: list[ConfigProblem] | None = None,
    found: Interpolated | None = None,
) -> Any:
    """Return a copy of `value` with variables replaced; unresolved ones are reported in `problems`.

    `env` is the environment alone, or `Variables` (environment, workspace folder, VS Code
    inputs). Every substitution of a variable or an input is recorded in `found` when given.
    """
    variables = env if isinstance(env, Variables) else Variables(os.environ if env is None else env)
    problems = [] if problems is None else problems
    if isinstance(value, str):
        return _substitute(value, variables, path, problems, found)
    if isinstance(value, dict):
        return {
            k: interpolate(v, variables, f"{path}.{k}" if path else str(k), problems, found)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [interpolate(v, variables, f"{path}[{i}]", problems, found) for i, v in enumerate(value)]
    return value


def _substitute(
    value: str, variables: Variables, path: str, problems: list[ConfigProblem], found: Interpolated | None
) -> str:
    substituted: list[str] = []  # values from the environment or an input: possibly secret
    predefined = variables.predefined()

    def substitute(match: re.Match[str]) -> str:
        if match.group("sep"):
            return os.sep
        if match.group("editor"):
            problems.append(
                ConfigProblem(
                    path, f"${{{match.group('editor')}}} is resolved by VS Code itself, not by a gateway"
                )
            )
            return match.group(0)
        input_id = match.group("input")
        if input_id is not None:
            resolved = _input_value(input_id, variables, path, problems)
            if resolved is None:
                return match.group(0)
            substituted.append(resolved)
            return resolved
        name, default = match.group("var"), match.group("default")
        if not match.group("env") and name in predefined:
            return predefined[name]
        if name in variables.env:
            substituted.append(variables.env[name])
            return variables.env[name]
        if default is not None:
            substituted.append(default)
            return default
        shown = f"${{env:{name}}}" if match.group("env") else f"${{{name}}}"
        problems.append(ConfigProblem(path, f"environment variable {shown} is not set (no default given)"))
        return match.group(0)

    result = _PATTERN.sub(substitute, value)
    if found is not None and substituted:
        if result:
            found.fields.add(result)
        found.parts.update(part for part in substituted if part)
    return result
