"""The tool definitions of real servers, as the gateway lists them: the search's labelled set runs over these.

Servers: `mcp-server-time` and `mcp-server-git` (PyPI), `@modelcontextprotocol/server-everything`
and `@modelcontextprotocol/server-memory` (npm), and Nexus's built-ins (device, cortex) plus the
gateway's own tools (python_sandbox, find_tools, call_tool). They are captured once into
fixtures/real_tools.json so the recall bench and test need no servers; `test_real_tools_fixture`
starts the servers again and fails when what they list has drifted from the file.

    .venv/bin/python tests/search/real_tools.py      # rewrite the fixture from the installed servers
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "real_tools.json"
REQUESTS = Path(__file__).resolve().parent / "fixtures" / "requests.json"
SEALED = Path(__file__).resolve().parent / "fixtures" / "sealed_requests.json"
SEALED2 = Path(__file__).resolve().parent / "fixtures" / "sealed2_requests.json"
SEALED3 = Path(__file__).resolve().parent / "fixtures" / "sealed3_requests.json"
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))

from mcp_nexus.catalog.index_entry import IndexEntry  # noqa: E402
from mcp_nexus.catalog.tags import Tagger  # noqa: E402
from support.processes import NODE_BIN, VENV_BIN, child_env  # noqa: E402


def _git_repo(path: Path) -> Path:
    path.mkdir()
    env = {**child_env(), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"}
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=env)
    (path / "README.md").write_text("hello\n")
    subprocess.run(["git", "-C", str(path), "add", "."], check=True, env=env)
    subprocess.run(["git", "-C", str(path), "commit", "-qm", "first"], check=True, env=env)
    return path


def _document(tmp: Path) -> dict[str, Any]:
    return {
        "gateway": {"tool_search": {"mode": "on"}},
        "servers": {
            "everything": {"command": str(NODE_BIN / "mcp-server-everything"), "args": ["stdio"]},
            "memory": {
                "command": str(NODE_BIN / "mcp-server-memory"),
                "env": {"MEMORY_FILE_PATH": str(tmp / "memory.jsonl")},
            },
            "git": {
                "command": str(VENV_BIN / "mcp-server-git"),
                "args": ["--repository", str(_git_repo(tmp / "repo"))],
            },
            "time": {"command": str(VENV_BIN / "mcp-server-time"), "args": ["--local-timezone", "UTC"]},
            "cortex": {
                "transport": "embedded",
                "module": "mcp_nexus.builtin.cortex.server:create_server",
                "options": {"knowledge_dir": str(tmp / "kb"), "preload": False},
            },
        },
    }


async def capture() -> list[dict[str, Any]]:
    """Every tool the gateway lists over these servers, in catalog order, as plain JSON."""
    from mcp_nexus.config.load import config_from_document
    from mcp_nexus.runtime import Runtime, RuntimeOptions

    with tempfile.TemporaryDirectory() as tmp_dir:
        config, _ = config_from_document(_document(Path(tmp_dir)))
        runtime = Runtime(config, RuntimeOptions(http=False, bridge=False, watch=False, wait_ready=True))
        await runtime.__aenter__()
        try:
            catalog = runtime.gateway.catalog
            tools = []
            for name, entry in catalog.tools.items():
                tool = entry.tool
                annotations = (
                    tool.annotations.model_dump(mode="json", by_alias=True, exclude_none=True)
                    if tool.annotations
                    else {}
                )
                tools.append(
                    {
                        "server": entry.candidates[0].upstream.name if entry.candidates else "gateway",
                        "name": name,
                        "tool_name": entry.candidates[0].tool.name if entry.candidates else name,
                        "description": tool.description or "",
                        "input_schema": dict(tool.input_schema or {}),
                        "annotations": annotations,
                    }
                )
        finally:
            await runtime.__aexit__(None, None, None)
    return tools


def load_fixture() -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return tools


def index_entries(tools: list[dict[str, Any]] | None = None) -> list[IndexEntry]:
    """The fixture's tools as the index holds them: tags from the same Tagger the sync uses."""
    tagger = Tagger()
    return [
        IndexEntry(
            server_id=tool["server"],
            tool_name=tool["tool_name"],
            name=tool["name"],
            description=tool["description"],
            input_schema=tool["input_schema"],
            annotations=tool["annotations"],
            tags=tagger.tags_for(tool["tool_name"], tool["description"], tool["annotations"]),
        )
        for tool in (load_fixture() if tools is None else tools)
    ]


def load_requests() -> list[dict[str, Any]]:
    """The labelled requests: {"request", "language" (en|zh), "tools" (any is right), "part" (tuning|held-out)}."""
    requests: list[dict[str, Any]] = json.loads(REQUESTS.read_text(encoding="utf-8"))
    return requests


def load_sealed_requests() -> list[dict[str, Any]]:
    """The sealed test set (50 English, 51 Chinese), written and committed before the second round of
    tuning and scored once, for the final ranker: {"request", "language", "tools", "part": "sealed"}."""
    requests: list[dict[str, Any]] = json.loads(SEALED.read_text(encoding="utf-8"))
    return [{**request, "part": "sealed"} for request in requests]


def load_sealed2_requests() -> list[dict[str, Any]]:
    """The second sealed set (84 English, 65 Chinese), written blind to the ranker by someone who did
    not tune it, after the third round, and scored once, for that round's ranker: part "sealed2"."""
    requests: list[dict[str, Any]] = json.loads(SEALED2.read_text(encoding="utf-8"))
    return [{**request, "part": "sealed2"} for request in requests]


def load_sealed3_requests() -> list[dict[str, Any]]:
    """The third sealed set (94 English, 77 Chinese), written blind to the ranker while a fourth
    round chose a sentence model on the other three sets, and scored once: part "sealed3"."""
    requests: list[dict[str, Any]] = json.loads(SEALED3.read_text(encoding="utf-8"))
    return [{**request, "part": "sealed3"} for request in requests]


if __name__ == "__main__":
    captured = asyncio.run(capture())
    FIXTURE.parent.mkdir(exist_ok=True)
    FIXTURE.write_text(json.dumps(captured, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{len(captured)} tools -> {FIXTURE.relative_to(ROOT)}")
