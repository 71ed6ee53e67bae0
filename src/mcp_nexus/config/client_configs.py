"""Where MCP clients keep their server lists, per OS, and which layout each file has.

| client | user file | project file (the current folder) |
|---|---|---|
| Claude Desktop | macOS `~/Library/Application Support/Claude/claude_desktop_config.json`, Windows `%APPDATA%\\Claude\\...`, Linux `~/.config/Claude/...` | - |
| Claude Code | `~/.claude.json` (`mcpServers`, and `projects.<folder>.mcpServers`) | `.mcp.json` |
| Cursor | `~/.cursor/mcp.json` | `.cursor/mcp.json` |
| VS Code | `settings.json` (`mcp: {servers, inputs}`) and `mcp.json` in the user folder (`~/Library/Application Support/Code/User/`, `%APPDATA%\\Code\\User\\`, `~/.config/Code/User/`) | `.vscode/mcp.json` |
| Windsurf | `~/.codeium/windsurf/mcp_config.json` | - |

The home folder, the OS, the current folder and the environment are parameters, so tests can
lay out every location under a temporary folder.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Layout = Literal["mcpServers", "claude-code-user", "vscode-mcp", "vscode-settings"]
OS = Literal["linux", "darwin", "windows"]


@dataclass(frozen=True)
class ClientFile:
    client: str  # "claude-desktop", "claude-code", "cursor", "vscode", "windsurf", or a file's own name
    path: Path
    layout: Layout
    scope: Literal["user", "project"] = "user"

    @property
    def label(self) -> str:
        return (
            f"{self.client} ({self.scope})"
            if self.client in ("cursor", "vscode", "claude-code")
            else self.client
        )


def _user_config_folder(home: Path, system: OS, env: Mapping[str, str]) -> Path:
    """Where desktop apps keep their settings: Application Support, %APPDATA%, or XDG_CONFIG_HOME."""
    if system == "darwin":
        return home / "Library" / "Application Support"
    if system == "windows":
        return Path(env["APPDATA"]) if env.get("APPDATA") else home / "AppData" / "Roaming"
    return Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"


def known_files(home: Path, system: OS, cwd: Path, env: Mapping[str, str]) -> list[ClientFile]:
    """Every place a client may keep MCP servers, in the order `nexus import` reads them."""
    apps = _user_config_folder(home, system, env)
    return [
        ClientFile("claude-desktop", apps / "Claude" / "claude_desktop_config.json", "mcpServers"),
        ClientFile("claude-code", home / ".claude.json", "claude-code-user"),
        ClientFile("claude-code", cwd / ".mcp.json", "mcpServers", "project"),
        ClientFile("cursor", home / ".cursor" / "mcp.json", "mcpServers"),
        ClientFile("cursor", cwd / ".cursor" / "mcp.json", "mcpServers", "project"),
        ClientFile("vscode", apps / "Code" / "User" / "settings.json", "vscode-settings"),
        ClientFile("vscode", apps / "Code" / "User" / "mcp.json", "vscode-mcp"),
        ClientFile("vscode", cwd / ".vscode" / "mcp.json", "vscode-mcp", "project"),
        ClientFile("windsurf", home / ".codeium" / "windsurf" / "mcp_config.json", "mcpServers"),
    ]


def _layout_of(doc: Any) -> Layout | None:
    if not isinstance(doc, dict):
        return None
    if "projects" in doc and isinstance(doc["projects"], dict):
        return "claude-code-user"
    if "mcpServers" in doc:
        return "mcpServers"
    if isinstance(doc.get("mcp"), dict):
        return "vscode-settings"
    if "servers" in doc:
        return "vscode-mcp"
    return None


def named_file(path: Path, doc: Any, known: list[ClientFile]) -> ClientFile | None:
    """A file given with `--from`: a known location keeps its client; any other is told by its content."""
    resolved = path.resolve()
    for candidate in known:
        if candidate.path.resolve() == resolved:
            return candidate
    layout = _layout_of(doc)
    if layout is None:
        return None
    if path.name == "claude_desktop_config.json":
        client = "claude-desktop"
    elif path.name == ".claude.json" or path.name == ".mcp.json":
        client = "claude-code"
    elif path.name == "mcp_config.json":
        client = "windsurf"
    elif path.parent.name in (".cursor", ".vscode"):
        client = path.parent.name.lstrip(".")
    elif layout.startswith("vscode"):
        client = "vscode"
    else:
        client = re.sub(r"[^A-Za-z0-9_-]+", "-", path.stem.lstrip(".")).strip("-") or "file"
    return ClientFile(client, path, layout, "user")
