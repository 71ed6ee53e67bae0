"""`nexus import`: real client files in each client's location, per OS, merged into one config that the
gateway's own loader accepts (config/config_import.py, config/client_configs.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp_nexus.config.client_configs import OS, known_files
from mcp_nexus.config.config_import import ImportResult, import_configs
from mcp_nexus.config.import_command import render_document, write_private
from mcp_nexus.config.jsonc import loads_jsonc
from mcp_nexus.config.load import load_config

BUILTINS = {"device", "cortex"}


def put(path: Path, content: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content, indent=2))
    return path


def run_import(
    home: Path, cwd: Path, system: OS = "linux", env: dict[str, str] | None = None
) -> ImportResult:
    files = known_files(home, system, cwd, env or {})
    return import_configs(files, cwd=cwd, home=home)


def load_written(result: ImportResult, tmp_path: Path, env: dict[str, str] | None = None) -> set[str]:
    """Write the result as `nexus import` does and load it with the gateway's loader: its server names."""
    output = tmp_path / "out" / "nexus.json"
    output.parent.mkdir(exist_ok=True)
    write_private(output, render_document(result, output), force=True)
    config, _ = load_config(output, env or {})
    return set(config.servers)


# Where each OS keeps Claude Desktop's file and VS Code's user settings, under the test's home.
DESKTOP_LOCATIONS: dict[str, tuple[str, str]] = {
    "linux": (".config/Claude/claude_desktop_config.json", ".config/Code/User/settings.json"),
    "darwin": (
        "Library/Application Support/Claude/claude_desktop_config.json",
        "Library/Application Support/Code/User/settings.json",
    ),
    "windows": (
        "AppData/Roaming/Claude/claude_desktop_config.json",
        "AppData/Roaming/Code/User/settings.json",
    ),
}


@pytest.mark.parametrize("system", ["linux", "darwin", "windows"])
def test_each_os_keeps_claude_desktop_and_vscode_settings_in_its_own_place(
    tmp_path: Path, system: OS
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir(parents=True)
    desktop, settings = DESKTOP_LOCATIONS[system]
    put(
        home / desktop,
        {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}, "theme": "x"},
    )
    put(
        home / settings,
        """{
          // VS Code writes comments and trailing commas
          "editor.fontSize": 14,
          "mcp": {"servers": {"fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"],},},},
        }""",
    )
    env = {"APPDATA": str(home / "AppData" / "Roaming")} if system == "windows" else {}
    result = run_import(home, project, system, env)
    assert set(result.taken) == {"time", "fetch"}
    assert result.taken["time"].source.startswith(f"claude-desktop {home / desktop}")
    assert result.skipped == []
    assert load_written(result, tmp_path) == {"time", "fetch", *BUILTINS}


def test_every_client_merged_renamed_skipped_and_reported(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir(parents=True)
    fs = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}
    put(home / ".config/Claude/claude_desktop_config.json", {"mcpServers": {"fs": fs}})
    put(
        home / ".claude.json",
        {
            "numStartups": 3,
            "mcpServers": {
                "github": {
                    "type": "http",
                    "url": "https://api.githubcopilot.com/mcp/",
                    "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"},
                }
            },
            "projects": {
                str(project): {
                    "mcpServers": {"db": {"command": "npx", "args": ["-y", "db-mcp"]}},
                    "disabledMcpjsonServers": ["legacy"],
                },
                "/somewhere/else": {"mcpServers": {"other": {"command": "x"}}},
            },
        },
    )
    put(project / ".mcp.json", {"mcpServers": {"fs": fs, "legacy": {"command": "old-server"}}})
    put(home / ".cursor/mcp.json", {"mcpServers": {"fs": {"command": "npx", "args": ["other-fs"]}}})
    put(
        project / ".cursor/mcp.json",
        {"mcpServers": {"my server": {"url": "https://mcp.example.test/mcp"}, "broken": {"args": ["x"]}}},
    )
    put(
        project / ".vscode/mcp.json",
        {
            "inputs": [
                {"type": "promptString", "id": "pplx-key", "description": "Perplexity key", "password": True}
            ],
            "servers": {
                "pplx": {
                    "type": "stdio",
                    "command": "npx",
                    "args": ["${workspaceFolder}/run.js"],
                    "env": {"PERPLEXITY_API_KEY": "${input:pplx-key}"},
                },
                "off": {"type": "stdio", "command": "x", "disabled": True},
            },
        },
    )
    put(
        home / ".codeium/windsurf/mcp_config.json",
        {"mcpServers": {"remote": {"serverUrl": "https://windsurf.example.test/sse"}}},
    )
    result = run_import(home, project)
    assert set(result.taken) == {"fs", "github", "db", "fs-cursor", "my-server", "pplx", "remote"}
    # the same definition twice: one server, both places named
    assert [place.split()[0] for place in result.taken["fs"].also_in] == ["claude-code"]
    # the same name, another definition: renamed after its client, and why
    renamed = result.taken["fs-cursor"]
    assert renamed.renamed_from == "fs" and "has another definition" in renamed.why_renamed
    assert result.taken["my-server"].renamed_from == "my server"
    skipped = {item.name: item.reason for item in result.skipped}
    assert skipped["legacy"] == "disabled"  # Claude Code's disabledMcpjsonServers for this folder
    assert skipped["off"] == "disabled"
    assert skipped["other"].startswith("belongs to project /somewhere/else")
    assert "cannot tell the transport" in skipped["broken"]
    # variables stay as written; VS Code's own ones are resolved as the source file meant them
    assert result.taken["github"].entry["headers"] == {"Authorization": "Bearer ${GITHUB_TOKEN}"}
    assert result.taken["pplx"].entry["args"] == [f"{project.resolve()}/run.js"]
    assert result.taken["remote"].entry["transport"] == "sse"  # Windsurf's serverUrl
    [needed] = result.needed_inputs()
    assert (needed.server, needed.input_id, needed.env_var) == ("pplx", "pplx-key", "NEXUS_INPUT_PPLX_KEY")
    env = {"GITHUB_TOKEN": "t0ken-value", "NEXUS_INPUT_PPLX_KEY": "pplx-value"}
    assert load_written(result, tmp_path, env) == {*result.taken, *BUILTINS}


def test_an_entry_the_gateway_would_refuse_is_skipped_with_the_reason(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir(parents=True)
    put(
        home / ".cursor/mcp.json",
        {
            "mcpServers": {
                "ftp": {"type": "http", "url": "ftp://files.example.test/mcp"},
                "fine": {"command": "npx", "env": {"URL": "${BASE_URL}"}},
            }
        },
    )
    result = run_import(home, project)
    assert set(result.taken) == {"fine"}
    [skipped] = result.skipped
    assert (
        skipped.name == "ftp"
        and "the gateway would refuse it" in skipped.reason
        and "http://" in skipped.reason
    )


def test_an_unreadable_file_is_skipped_and_reported(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir(parents=True)
    put(home / ".cursor/mcp.json", "{not json")
    result = run_import(home, project)
    assert result.taken == {} and "cannot read it" in result.skipped[0].reason


def test_jsonc_comments_inside_strings_stay() -> None:
    text = '{\n // "quoted" in a comment\n "a": "http://x//y", /* b\n */ "c": [1, 2,], "d": "q\\"//x",\n}'
    assert loads_jsonc(text) == {"a": "http://x//y", "c": [1, 2], "d": 'q"//x'}
