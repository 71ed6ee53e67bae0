"""The design's own usage example (6.1-6.3): McpManager.initialize(config_path, llm_client), a UnifiedTask
"打开客厅的灯" enqueued on the task queue, carried out, then close(). The model is the fake
chat-completions server (the one allowed double: no model is reachable here) through the real openai client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp_nexus.config.control import LLMSettings
from mcp_nexus.control.openai_client import OpenAICompatibleClient
from mcp_nexus.control.task import TaskStatus, TaskType, UnifiedTask
from mcp_nexus.manager import McpManager
from support.fake_openai import Reply, error, fake_openai, json_text, request_kind, tool_call
from support.home_server import make_devices

from .helpers import API_KEY, control_document

pytestmark = pytest.mark.timeout(60)


def model(body: dict[str, Any]) -> Reply:
    kind = request_kind(body)
    if kind == "plan":
        return json_text({"steps": ["打开客厅的灯"]})
    if kind == "route":
        return tool_call("home__turn_on", {"entity_id": "客厅的灯"})
    return error(500, "unscripted")


async def test_design_example_turns_on_the_living_room_light(tmp_path: Path) -> None:
    document = control_document(tmp_path, None)
    document["control"]["environment"] = {"devices": make_devices(4)}  # living room light (off), lamp, ...
    config_path = tmp_path / "mcp_server.json"
    config_path.write_text(json.dumps(document))
    with fake_openai(model) as fake:
        llm_client = OpenAICompatibleClient(
            LLMSettings(base_url=fake.base_url, api_key=API_KEY, max_retries=0)
        )
        manager = McpManager()
        assert McpManager() is manager  # one per process
        await manager.initialize(config_path=str(config_path), llm_client=llm_client)
        try:
            task = UnifiedTask(
                task_type=TaskType.MCP_CALL,
                execution_data={"goal": "打开客厅的灯", "user_intent": "打开客厅的灯"},  # type: ignore[arg-type]
                context={},
            )
            await manager.task_queue.enqueue(task)
            done = await manager.control.wait(task.id, 20)
            assert done.status is TaskStatus.SUCCEEDED, done.error
            (step,) = done.history
            assert step.tool == "home.turn_on" and step.arguments["entity_id"] in {
                "light.living_room",
                "light.living_room_lamp",
            }
            assert step.confidence == 0.8
        finally:
            await manager.close()
    assert McpManager() is not manager and not McpManager().initialized
