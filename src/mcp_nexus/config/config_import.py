"""`nexus import`: one Nexus config from the MCP server lists a user's clients already have.

Each file is read with the dialect parsers of config/formats.py (the same ones `nexus serve`
uses), without resolving `${VAR}`: the written config keeps every variable as written, so
secrets that lived in the environment stay there. VS Code's predefined variables
(`${workspaceFolder}`, `${userHome}`, ...) are resolved as the source file meant them, since
they would mean the new file's folder afterwards; `${input:ID}` is kept (with its `inputs`
declaration) and reported: the gateway reads it from `NEXUS_INPUT_<ID>`.

Merging, in the order of client_configs.known_files: a name seen again with the same
definition is merged (reported once, with every place it came from); the same name with
another definition is renamed `<name>-<client>` (then `-2`, `-3`, ...) and reported; a
disabled server is skipped; an entry the gateway would refuse is skipped with the reason.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_nexus.config.client_configs import ClientFile
from mcp_nexus.config.errors import ConfigError, ConfigProblem
from mcp_nexus.config.formats import normalise
from mcp_nexus.config.interpolate import input_env_name, workspace_folder
from mcp_nexus.config.jsonc import loads_jsonc
from mcp_nexus.config.load import config_from_document, decode_config_text, read_config_bytes

_INPUT = re.compile(r"\$\{input:([^}]+)\}")
_PREDEFINED = re.compile(r"\$\{(workspaceFolder|workspaceFolderBasename|userHome|pathSeparator|/)\}")
_SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]+$")  # a server's name is its tools' namespace


@dataclass
class Taken:
    name: str  # its name in the written config
    source: str  # where it was read: "cursor (user) ~/.cursor/mcp.json mcpServers.fs"
    entry: dict[str, Any]
    also_in: list[str] = field(default_factory=list)  # the same definition seen there too (merged)
    renamed_from: str | None = None
    why_renamed: str = ""


@dataclass
class Skipped:
    name: str
    source: str
    reason: str


@dataclass
class NeededInput:
    server: str
    input_id: str
    env_var: str
    default: str | None


@dataclass
class ImportResult:
    taken: dict[str, Taken] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    read: list[str] = field(default_factory=list)  # files read
    missing: list[str] = field(default_factory=list)  # places looked at where there was no file
    inputs: dict[str, dict[str, Any]] = field(default_factory=dict)  # VS Code input declarations by id

    def needed_inputs(self) -> list[NeededInput]:
        needed = []
        for taken in self.taken.values():
            for input_id in sorted(set(_INPUT.findall(json.dumps(taken.entry)))):
                declared = self.inputs.get(input_id, {})
                default = declared.get("default")
                needed.append(
                    NeededInput(
                        taken.name,
                        input_id,
                        input_env_name(input_id),
                        default if isinstance(default, str) else None,
                    )
                )
        return needed

    def document(self) -> dict[str, Any]:
        """The Nexus config to write: the servers, and the `inputs` their `${input:ID}` need."""
        doc: dict[str, Any] = {"servers": {t.name: t.entry for t in self.taken.values()}}
        used = {need.input_id for need in self.needed_inputs()}
        if used:
            doc["inputs"] = [self.inputs.get(i, {"type": "promptString", "id": i}) for i in sorted(used)]
        return doc


class _AnyVariable(Mapping[str, str]):
    """Every environment variable set, to a value any field accepts: checks an entry's shape only."""

    def __getitem__(self, key: str) -> str:
        return "http://placeholder.invalid"

    def __contains__(self, key: object) -> bool:
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _refusal(name: str, entry: dict[str, Any], inputs: list[dict[str, Any]]) -> str | None:
    """Why the gateway would refuse this entry (its variables assumed set), or None."""
    doc: dict[str, Any] = {"servers": {name: entry}}
    if inputs:
        # Any value is acceptable here: a pickString's choices are checked when the gateway loads it.
        doc["inputs"] = [{"id": i["id"], "type": "promptString"} for i in inputs]
    try:
        config_from_document(doc, "<import>", _AnyVariable(), include_builtins=False)
    except ConfigError as exc:
        return "; ".join(str(p) for p in exc.problems)
    return None


def _read(path: Path) -> Any:
    source = str(path)
    return loads_jsonc(decode_config_text(read_config_bytes(path, source), source))


def _resolve_predefined(value: Any, workspace: Path, home: Path) -> Any:
    values = {
        "workspaceFolder": str(workspace),
        "workspaceFolderBasename": workspace.name,
        "userHome": str(home),
        "pathSeparator": os.sep,
        "/": os.sep,
    }
    if isinstance(value, str):
        return _PREDEFINED.sub(lambda m: values[m.group(1)], value)
    if isinstance(value, dict):
        return {k: _resolve_predefined(v, workspace, home) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve_predefined(v, workspace, home) for v in value]
    return value


def _windsurf_urls(servers: Any) -> Any:
    """Windsurf writes a remote server's URL as `serverUrl`."""
    if not isinstance(servers, dict):
        return servers
    return {
        name: (
            {("url" if k == "serverUrl" and "url" not in entry else k): v for k, v in entry.items()}
            if isinstance(entry, dict)
            else entry
        )
        for name, entry in servers.items()
    }


@dataclass
class _Section:
    """One server list inside a client file, as a document the dialect parsers read."""

    where: str  # "mcpServers", "projects./work/app.mcpServers", "mcp"
    doc: dict[str, Any]
    disabled: frozenset[str] = frozenset()


def _project_entry(projects: dict[str, Any], cwd: Path) -> tuple[str, dict[str, Any]] | None:
    for key, project in projects.items():
        if isinstance(project, dict) and Path(key).expanduser().resolve() == cwd.resolve():
            return key, project
    return None


def _sections(file: ClientFile, doc: Any, cwd: Path, result: ImportResult) -> list[_Section]:
    if not isinstance(doc, dict):
        return []
    if file.layout == "vscode-settings":
        mcp = doc.get("mcp")
        return [_Section("mcp", {"inputs": [], **mcp})] if isinstance(mcp, dict) else []
    if file.layout == "vscode-mcp":
        return [_Section("", {"inputs": [], **doc})]
    sections = []
    if "mcpServers" in doc:
        sections.append(_Section("mcpServers", {"mcpServers": _windsurf_urls(doc["mcpServers"])}))
    if file.layout == "claude-code-user" and isinstance(doc.get("projects"), dict):
        found = _project_entry(doc["projects"], cwd)
        for key, project in doc["projects"].items():
            servers = project.get("mcpServers") if isinstance(project, dict) else None
            if not servers or not isinstance(servers, dict):
                continue
            if found is None or key != found[0]:
                for name in servers:
                    result.skipped.append(
                        Skipped(
                            str(name),
                            f"{file.label} {file.path} projects.{key}",
                            f"belongs to project {key} (run nexus import in that folder to take it)",
                        )
                    )
                continue
            disabled = frozenset(map(str, project.get("disabledMcpServers") or ()))
            sections.append(
                _Section(f"projects.{key}.mcpServers", {"mcpServers": _windsurf_urls(servers)}, disabled)
            )
    return sections


def _inputs_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    raw = doc.get("inputs")
    return (
        [i for i in raw if isinstance(i, dict) and isinstance(i.get("id"), str)]
        if isinstance(raw, list)
        else []
    )


def _disabled_in_project(claude_user: Any, cwd: Path) -> frozenset[str]:
    """Claude Code's per-project `disabledMcpjsonServers`: `.mcp.json` servers turned off for this folder."""
    if not isinstance(claude_user, dict) or not isinstance(claude_user.get("projects"), dict):
        return frozenset()
    found = _project_entry(claude_user["projects"], cwd)
    return frozenset(map(str, found[1].get("disabledMcpjsonServers") or ())) if found else frozenset()


def import_configs(files: list[ClientFile], *, cwd: Path, home: Path, explicit: bool = False) -> ImportResult:
    """Read `files` in order and merge their servers; `explicit`: the user named them (a missing one is an error)."""
    result = ImportResult()
    claude_user: Any = None
    for file in files:
        if not file.path.is_file():
            if explicit:
                raise ConfigError(str(file.path), [ConfigProblem("", "no such file")])
            result.missing.append(f"{file.label}: {file.path}")
            continue
        try:
            doc = _read(file.path)
        except (ConfigError, json.JSONDecodeError) as exc:
            if explicit:
                raise ConfigError(str(file.path), [ConfigProblem("", f"cannot read it: {exc}")]) from exc
            result.skipped.append(Skipped("*", f"{file.label} {file.path}", f"cannot read it: {exc}"))
            continue
        result.read.append(f"{file.label}: {file.path}")
        if file.layout == "claude-code-user":
            claude_user = doc
        sections = _sections(file, doc, cwd, result)
        if file.client == "claude-code" and file.scope == "project":
            disabled = _disabled_in_project(claude_user, cwd)
            sections = [_Section(s.where, s.doc, s.disabled | disabled) for s in sections]
        for section in sections:
            _take_section(file, section, result, home)
    return result


def _take_section(file: ClientFile, section: _Section, result: ImportResult, home: Path) -> None:
    workspace = workspace_folder(file.path)
    doc = _resolve_predefined(section.doc, workspace, home)
    inputs = _inputs_of(doc)
    for declared in inputs:
        result.inputs.setdefault(declared["id"], declared)
    problems: list[ConfigProblem] = []
    normalised = normalise(doc, problems, workspace=workspace)
    servers: dict[str, Any] = normalised.data.get("servers", {})
    raw = doc.get("mcpServers", doc.get("servers"))
    for name in raw if isinstance(raw, dict) else ():
        name = str(name)
        path = f"{section.where}.{name}" if section.where else f"servers.{name}"
        source = f"{file.label} {file.path} {path}"
        own = [p for p in problems if p.path == path or p.path.startswith((f"{path}.", f"{path}["))]
        if own or name not in servers:
            reason = "; ".join(p.message for p in own) or "not a server entry"
            result.skipped.append(Skipped(name, source, reason))
            continue
        normalised_entry = servers[name]
        # `transport` first: what a reader of the written file wants to see first
        entry = {"transport": normalised_entry["transport"]}
        entry.update((k, v) for k, v in normalised_entry.items() if k not in ("name", "transport"))
        if name in section.disabled or entry.get("enabled") is False:
            result.skipped.append(Skipped(name, source, "disabled"))
            continue
        entry.pop("enabled", None)
        refusal = _refusal(name, entry, inputs)
        if refusal is not None:
            result.skipped.append(Skipped(name, source, f"the gateway would refuse it: {refusal}"))
            continue
        _add(result, name, entry, source, file.client)


def _add(result: ImportResult, name: str, entry: dict[str, Any], source: str, client: str) -> None:
    wanted = (
        name if _SERVER_NAME.match(name) else re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-") or "server"
    )
    why = "" if wanted == name else f"{name!r} is not a valid server name (letters, digits, '_' and '-')"
    existing = result.taken.get(wanted)
    if existing is not None and existing.entry == entry:
        existing.also_in.append(source)
        return
    if existing is not None:
        why = f"{wanted!r} from {existing.source} has another definition"
        base = f"{wanted}-{client}"
        wanted, count = base, 2
        while wanted in result.taken:
            wanted, count = f"{base}-{count}", count + 1
    result.taken[wanted] = Taken(wanted, source, entry, renamed_from=name if why else None, why_renamed=why)
