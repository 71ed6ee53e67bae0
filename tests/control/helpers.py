"""What the control-plane tests share: a gateway config with real upstreams (cortex, the home server)
and the control plane pointed at the fake OpenAI-compatible server (tests/support/fake_openai.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp_types as types

API_KEY = "sk-test-fake-key-0123456789"


def control_document(
    tmp_path: Path, llm_url: str | None, *, devices: int = 12, **control: Any
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "gateway": {"include_builtins": False},
        "servers": {
            "cortex": {
                "transport": "embedded",
                "module": "mcp_nexus.builtin.cortex.server:create_server",
                "options": {"knowledge_dir": str(tmp_path / "kb"), "preload": False},
            },
            "home": {
                "transport": "embedded",
                "module": "support.home_server:create_server",
                "options": {"devices": devices},
            },
        },
        "control": {
            "enabled": True,
            "queue_path": str(tmp_path / "tasks.sqlite"),
            "retry_backoff": 0.01,
            **control,
        },
    }
    if llm_url is not None:
        document["llm"] = {
            "base_url": llm_url,
            "api_key": API_KEY,
            "model": "qwen3-max",
            "max_retries": 0,
            "timeout": 10,
        }
    return document


def text_of(result: types.CallToolResult) -> str:
    return "".join(part.text for part in result.content if isinstance(part, types.TextContent))


def goal_of(body: dict[str, Any]) -> str:
    """The goal line of a routing request (router.py writes "Goal: ..." first)."""
    for message in body.get("messages", []):
        content = str(message.get("content") or "")
        if content.startswith("Goal: "):
            return content.splitlines()[0][len("Goal: ") :]
    return ""


ADD = {"category": "tech_stack", "type": "framework"}
FASTAPI = {**ADD, "id": "fastapi", "name": "FastAPI", "desc": "A Python web framework"}
STARLETTE = {**ADD, "id": "starlette", "name": "Starlette", "desc": "An ASGI toolkit"}
USES = {"src": "fastapi", "rel": "uses", "dst": "starlette"}
PLAN = ["add the entity fastapi", "add the entity starlette", "connect fastapi uses starlette"]
