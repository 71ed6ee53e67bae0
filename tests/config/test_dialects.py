"""Every dialect carries every Nexus section; VS Code, Claude Code and Cursor files load as written.

The walk (every section x every dialect) checks that the section's value reaches the loaded
`NexusConfig`, not merely that nothing was warned about.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcp_nexus.config.envfile import MAX_BYTES
from mcp_nexus.config.errors import ConfigError, ConfigProblem
from mcp_nexus.config.formats import NEXUS_SECTIONS
from mcp_nexus.config.interpolate import input_env_name
from mcp_nexus.config.load import load_config
from mcp_nexus.config.schema import NexusConfig

# -- realistic files, one per dialect --------------------------------------------------------------

# VS Code's `.vscode/mcp.json`, shaped as its documentation writes it.
VSCODE = {
    "inputs": [
        {
            "type": "promptString",
            "id": "perplexity-key",
            "description": "Perplexity API Key",
            "password": True,
        }
    ],
    "servers": {
        "Perplexity": {
            "type": "stdio",
            "command": "npx",
            "args": ["-y", "server-perplexity-ask"],
            "env": {"PERPLEXITY_API_KEY": "${input:perplexity-key}"},
        },
        "fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"]},
        "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"},
        "local": {
            "type": "stdio",
            "command": "python",
            "args": ["${workspaceFolder}/server.py"],
            "envFile": "${workspaceFolder}/.env",
            "env": {"HOME_COPY": "${userHome}", "TOKEN": "${env:LOCAL_TOKEN}"},
        },
        "legacy": {
            "type": "sse",
            "url": "http://localhost:3000/sse",
            "headers": {"X-Key": "${input:perplexity-key}"},
        },
    },
}

# Claude Code's project `.mcp.json`.
CLAUDE_CODE = {
    "mcpServers": {
        "github": {
            "type": "http",
            "url": "https://api.githubcopilot.com/mcp/",
            "headers": {"Authorization": "Bearer ${GITHUB_PAT}"},
        },
        "airtable": {
            "type": "stdio",
            "command": "npx",
            "args": ["-y", "airtable-mcp-server"],
            "env": {"AIRTABLE_API_KEY": "${AIRTABLE_API_KEY}"},
        },
        "api-server": {
            "type": "sse",
            "url": "${API_BASE_URL:-https://api.example.com}/sse",
            "headers": {"Authorization": "Bearer ${API_TOKEN:-none}"},
        },
    }
}

# Cursor's `.cursor/mcp.json` (project) or `~/.cursor/mcp.json` (global).
CURSOR = {
    "mcpServers": {
        "server-name": {
            "command": "npx",
            "args": ["-y", "mcp-server"],
            "env": {"API_KEY": "${env:API_KEY}"},
        },
        "remote": {
            "url": "https://mcp.example.com/mcp",
            "headers": {"Authorization": "Bearer ${env:MY_TOKEN}"},
        },
        "python-server": {
            "type": "stdio",
            "command": "python",
            "args": ["${workspaceFolder}/mcp_server.py"],
            "envFile": ".env",
        },
    }
}

ENV = {
    input_env_name("perplexity-key"): "pplx-secret-value",
    "LOCAL_TOKEN": "local-token-value",
    "GITHUB_PAT": "ghp_example_token",
    "AIRTABLE_API_KEY": "airtable-key-value",
    "API_KEY": "cursor-api-key",
    "MY_TOKEN": "cursor-bearer-token",
}


def _simple(doc: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    return lambda: json.loads(json.dumps(doc))


# name -> (file name relative to the test folder, the document, source_format, a server it must hold)
DIALECTS: dict[str, tuple[str, Callable[[], dict[str, Any]], str, str]] = {
    "nexus": ("nexus.json", _simple({"servers": {"t": {"command": "mcp-server-time"}}}), "nexus", "t"),
    "claude-desktop": (
        "claude_desktop_config.json",
        _simple({"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}),
        "mcpServers",
        "time",
    ),
    "lumi": (
        "mcp_config.json",
        _simple({"mcpServers": {"files": {"type": "external", "transport": "stdio", "command": "python"}}}),
        "lumi",
        "files",
    ),
    "seed": (
        "gateway.json",
        _simple(
            {"servers": [{"name": "lights", "type": "external", "transport": "http", "url": "http://h/mcp"}]}
        ),
        "seed",
        "lights",
    ),
    "controller": (
        "mcp_server.json",
        _simple({"mcp_servers": [{"id": "search", "url": "http://h/mcp"}], "cache_ttl_seconds": 60}),
        "controller",
        "search",
    ),
    "bridge": (
        "bridge.json",
        _simple({"services": {"calculator": {"type": "stdio", "command": "calc", "namespace": "calc"}}}),
        "bridge",
        "calculator",
    ),
    "vscode": (".vscode/mcp.json", _simple(VSCODE), "vscode", "Perplexity"),
    "claude-code": (".mcp.json", _simple(CLAUDE_CODE), "mcpServers", "github"),
    "cursor": (".cursor/mcp.json", _simple(CURSOR), "mcpServers", "remote"),
}

# The dialects whose files other programs read too: an unknown key there is only a warning.
LENIENT = {"claude-desktop", "lumi", "controller", "claude-code", "cursor"}

# One non-default value per Nexus section (a new section must add one: see the first test).
SECTION_SAMPLES: dict[str, dict[str, Any]] = {
    "gateway": {"port": 9911, "rate_limit": "7/second"},
    "xiaozhi": {"result_limit_bytes": 2048},
    "stores": {"default": "redis://127.0.0.1:6379/0", "key_prefix": "desk"},
    "llm": {"base_url": "http://127.0.0.1:11434/v1", "model": "qwen3:8b"},
    "control": {"enabled": True, "max_steps": 5},
    # A section keyed by name (like servers): each sample key is one entry.
    "chains": {
        "greet": {
            "description": "Say hello",
            "steps": [{"tool": "t.echo", "arguments": {"x": "{{ input }}"}}],
        }
    },
    "profiles": {"eng": {"servers": ["t"], "tools": ["tag:search"], "bind": {"groups": ["eng"]}}},
}


def write(tmp_path: Path, name: str, doc: Any) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    (tmp_path / ".env").write_text("FROM_FILE=1\nexport QUOTED='a b'\n", encoding="utf-8")
    return path


def load_dialect(
    tmp_path: Path, dialect: str, extra: dict[str, Any] | None = None, env: dict[str, str] | None = None
) -> tuple[NexusConfig, list[ConfigProblem]]:
    name, build, _format, _server = DIALECTS[dialect]
    doc = {**build(), **(extra or {})}
    return load_config(write(tmp_path, name, doc), ENV if env is None else env, include_builtins=False)


def test_every_section_of_the_model_has_a_sample() -> None:
    assert set(SECTION_SAMPLES) == set(NEXUS_SECTIONS)
    assert "stores" in NEXUS_SECTIONS and "servers" not in NEXUS_SECTIONS


@pytest.mark.parametrize("dialect", DIALECTS)
def test_each_dialect_loads_as_written(tmp_path: Path, dialect: str) -> None:
    config, warnings = load_dialect(tmp_path, dialect)
    _name, _build, source_format, server = DIALECTS[dialect]
    assert config.source_format == source_format
    assert server in config.servers
    assert warnings == []


@pytest.mark.parametrize("section", NEXUS_SECTIONS)
@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_section_beside_every_dialect(tmp_path: Path, dialect: str, section: str) -> None:
    sample = SECTION_SAMPLES[section]
    config, warnings = load_dialect(tmp_path, dialect, {section: sample})
    assert config.source_format == DIALECTS[dialect][2]
    loaded, default = getattr(config, section), getattr(NexusConfig(), section)
    for key, value in sample.items():
        if isinstance(loaded, dict):  # a section of named entries: the entry, validated as the model does
            assert key not in default, f"the sample for {section}.{key} is the default"
            assert key in loaded, f"{dialect}: {section}.{key} did not reach the config"
            assert loaded[key] == type(loaded[key]).model_validate(value), (
                f"{dialect}: {section}.{key} changed"
            )
            continue
        assert getattr(default, key) != value, f"the sample for {section}.{key} is the default"
        assert getattr(loaded, key) == value, f"{dialect}: {section}.{key} did not reach the config"
    assert not any(w.path == section for w in warnings), warnings
    assert DIALECTS[dialect][3] in config.servers


def test_the_controller_index_keys_merge_with_a_gateway_section(tmp_path: Path) -> None:
    config, _ = load_dialect(tmp_path, "controller", {"gateway": {"port": 9911, "index": {"persist": False}}})
    index = config.gateway.index
    assert (config.gateway.port, index.cache_ttl_seconds, index.persist) == (9911, 60, False)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_misspelt_section_is_an_error_with_the_right_name(tmp_path: Path, dialect: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_dialect(tmp_path, dialect, {"stroes": {"default": "redis://h:6379/0"}})
    assert "stroes: " in str(caught.value) and "did you mean 'stores'?" in str(caught.value)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_unknown_key_is_named(tmp_path: Path, dialect: str) -> None:
    extra = {"globalShortcut": "Ctrl+Space"}
    if dialect in LENIENT:
        _config, warnings = load_dialect(tmp_path, dialect, extra)
        assert [str(w) for w in warnings] == ["globalShortcut: not a gateway setting; ignored"]
    else:
        with pytest.raises(ConfigError) as caught:
            load_dialect(tmp_path, dialect, extra)
        message = str(caught.value)
        assert "globalShortcut: unknown top-level key (expected " in message and "'stores'" in message


# -- VS Code ---------------------------------------------------------------------------------------


def test_vscode_file_resolves_inputs_env_and_predefined_variables(tmp_path: Path) -> None:
    config, warnings = load_dialect(tmp_path, "vscode")
    assert warnings == [] and config.source_format == "vscode"
    servers = config.servers
    assert servers["Perplexity"].env == {"PERPLEXITY_API_KEY": "pplx-secret-value"}
    assert servers["Perplexity"].effective_namespace == "Perplexity"
    assert servers["github"].transport == "http" and servers["legacy"].transport == "sse"
    assert servers["legacy"].headers == {"X-Key": "pplx-secret-value"}
    local = servers["local"]
    assert local.args == [f"{tmp_path.resolve()}/server.py"]  # the folder holding .vscode/
    assert local.env == {
        "FROM_FILE": "1",
        "QUOTED": "a b",
        "HOME_COPY": str(Path.home()),
        "TOKEN": "local-token-value",
    }
    # an input's value is a secret like any ${VAR}: masked by `nexus config check`, redacted from logs
    assert "pplx-secret-value" in config.interpolated_values


def test_vscode_missing_input_names_the_field_the_input_and_the_variable(tmp_path: Path) -> None:
    env = {k: v for k, v in ENV.items() if not k.startswith("NEXUS_INPUT_")}
    with pytest.raises(ConfigError) as caught:
        load_dialect(tmp_path, "vscode", env=env)
    message = str(caught.value)
    assert (
        "servers.Perplexity.env.PERPLEXITY_API_KEY: input 'perplexity-key' ('Perplexity API Key') has no value "
        "and a gateway cannot prompt for it: set NEXUS_INPUT_PERPLEXITY_KEY "
        "(or NEXUS_INPUT_PERPLEXITY_KEY_FILE to a file holding it)"
    ) in message
    assert "servers.legacy.headers.X-Key: input 'perplexity-key'" in message


def test_vscode_input_from_a_file_or_its_default(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("from-a-file\n")
    env = {**ENV, "NEXUS_INPUT_PERPLEXITY_KEY_FILE": str(secret)}
    del env["NEXUS_INPUT_PERPLEXITY_KEY"]
    config, _ = load_dialect(tmp_path, "vscode", env=env)
    assert config.servers["Perplexity"].env["PERPLEXITY_API_KEY"] == "from-a-file"
    doc = {
        "inputs": [{"type": "pickString", "id": "region", "options": ["eu", "us"], "default": "eu"}],
        "servers": {"s": {"type": "http", "url": "https://${input:region}.example.com/mcp"}},
    }
    config, _ = load_config(write(tmp_path, "mcp.json", doc), {}, include_builtins=False)
    assert config.servers["s"].url == "https://eu.example.com/mcp"
    with pytest.raises(
        ConfigError, match=r"servers.s.url: input 'region': NEXUS_INPUT_REGION must be one of 'eu', 'us'"
    ):
        load_config(write(tmp_path, "mcp.json", doc), {"NEXUS_INPUT_REGION": "mars"}, include_builtins=False)


def test_workspace_folder_outside_dot_vscode_is_the_files_folder(tmp_path: Path) -> None:
    doc = {
        "servers": {
            "s": {
                "type": "stdio",
                "command": "${workspaceFolder}${/}run",
                "cwd": "${workspaceFolderBasename}",
            }
        }
    }
    config, _ = load_config(write(tmp_path / "proj", "mcp.json", doc), {}, include_builtins=False)
    assert config.servers["s"].command == f"{(tmp_path / 'proj').resolve()}/run"
    assert config.servers["s"].cwd == "proj"


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (
            {"inputs": {"id": "x"}, "servers": {}},
            "inputs: expected a list of {type, id, description} objects",
        ),
        (
            {"inputs": [{"type": "promptString"}], "servers": {}},
            "inputs[0].id: each input needs a non-empty string 'id'",
        ),
        (
            {"inputs": [{"type": "promptText", "id": "x"}], "servers": {}},
            "inputs[0].type: expected one of 'promptString', 'pickString', 'command', got 'promptText'",
        ),
        ({"inputs": [{"id": "x"}, {"id": "x"}], "servers": {}}, "inputs[1].id: duplicate input id 'x'"),
        (
            {"servers": {"s": {"type": "stdio", "command": "${input:nope}"}}},
            "servers.s.command: input 'nope' (not declared in 'inputs') has no value",
        ),
        (
            {"servers": {"s": {"type": "stdio", "command": "${command:pickFile}"}}},
            "servers.s.command: ${command:pickFile} is resolved by VS Code itself, not by a gateway",
        ),
        (
            {"servers": {"s": {"type": "stdio", "command": "x", "env": {"A": "${env:UNSET_ONE}"}}}},
            "servers.s.env.A: environment variable ${env:UNSET_ONE} is not set",
        ),
        (
            {"servers": {"s": {"type": "stdio", "command": "x", "envFile": "absent.env"}}},
            "servers.s.envFile: cannot read the env file",
        ),
        (
            {"servers": {"s": {"type": "stdio", "command": "x", "envFile": 3}}},
            "servers.s.envFile: expected the path of a KEY=VALUE file",
        ),
        ({"servers": {"s": {"type": "carrier-pigeon", "command": "x"}}}, "servers.s.type: expected"),
        ({"servers": {"s": {"type": "http"}}}, "servers.s: an http server needs 'url'"),
    ],
)
def test_bad_vscode_files_name_the_field(tmp_path: Path, doc: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, "mcp.json", doc), {}, include_builtins=False)
    assert expected in str(caught.value), str(caught.value)


def test_a_bad_env_file_line_is_named_without_its_content(tmp_path: Path) -> None:
    (tmp_path / "bad.env").write_text("GOOD=1\nthis-is-a-secret-line\n")
    doc = {"servers": {"s": {"type": "stdio", "command": "x", "envFile": "bad.env"}}}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ConfigError) as caught:
        load_config(path, {}, include_builtins=False)
    assert "bad.env' line 2: expected KEY=VALUE" in str(caught.value)
    assert "secret-line" not in str(caught.value)


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda folder: os.mkfifo(folder / "pipe.env"), "pipe.env' is not a regular file"),
        (
            lambda folder: (folder / "big.env").write_bytes(b"A=" + b"x" * MAX_BYTES),
            "is larger than 1048576 bytes",
        ),
        (lambda folder: (folder / "latin.env").write_bytes(b"A=caf\xe9\n"), "is not UTF-8 (byte 5)"),
    ],
    ids=["fifo", "too-large", "not-utf8"],
)
def test_an_env_file_that_is_no_dotenv_file_is_refused_at_once(
    tmp_path: Path, make: Callable[[Path], Any], expected: str
) -> None:
    make(tmp_path)
    name = next(p.name for p in tmp_path.iterdir())
    doc = {"servers": {"s": {"type": "stdio", "command": "x", "envFile": name}}}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ConfigError) as caught:  # a FIFO with no writer would block a plain read forever
        load_config(path, {}, include_builtins=False)
    assert "servers.s.envFile" in str(caught.value) and expected in str(caught.value), str(caught.value)


# -- Claude Code and Cursor ------------------------------------------------------------------------


def test_claude_code_file(tmp_path: Path) -> None:
    config, warnings = load_dialect(tmp_path, "claude-code")
    servers = config.servers
    assert warnings == [] and config.source_format == "mcpServers"
    assert servers["github"].headers == {"Authorization": "Bearer ghp_example_token"}
    assert (
        servers["airtable"].transport == "stdio"
        and servers["airtable"].env["AIRTABLE_API_KEY"] == "airtable-key-value"
    )
    api = servers["api-server"]
    assert (api.transport, api.url, api.headers) == (
        "sse",
        "https://api.example.com/sse",
        {"Authorization": "Bearer none"},
    )
    assert servers["github"].effective_namespace == "github"


def test_cursor_file(tmp_path: Path) -> None:
    config, warnings = load_dialect(tmp_path, "cursor")
    servers = config.servers
    assert warnings == [] and config.source_format == "mcpServers"
    assert servers["server-name"].env == {"API_KEY": "cursor-api-key"}
    assert servers["remote"].transport == "http"
    assert servers["remote"].headers == {"Authorization": "Bearer cursor-bearer-token"}
    python = servers["python-server"]
    assert python.args == [f"{tmp_path.resolve()}/mcp_server.py"]  # the folder holding .cursor/
    assert python.env == {"FROM_FILE": "1", "QUOTED": "a b"}  # a relative envFile: from the workspace


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (
            {"mcpServers": {"t": {"command": "x", "prioritty": 3}}},
            "mcpServers.t.prioritty: unknown field; did you mean 'priority'?",
        ),
        ({"stores": {"defualt": "memory"}}, "stores.defualt: unknown field; did you mean 'default'?"),
        (
            {"gateway": {"index": {"persit": False}}},
            "gateway.index.persit: unknown field; did you mean 'persist'?",
        ),
        ({"mcpServers": {"t": {"command": "x", "zzzzz": 1}}}, "mcpServers.t.zzzzz: unknown field (got 1)"),
    ],
)
def test_a_misspelt_field_names_the_closest(tmp_path: Path, doc: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, "nexus.json", doc), {}, include_builtins=False)
    assert expected in str(caught.value), str(caught.value)
