"""The real `openai` SDK (inside OpenAICompatibleClient) against the fake chat-completions server.

The fake (tests/support/fake_openai.py) is the one allowed test double: no model can be
reached from these machines, so it speaks the documented wire format instead.
"""

from __future__ import annotations

import logging

import pytest

from mcp_nexus.config.control import LLMSettings
from mcp_nexus.control.llm_protocol import LLMClientProtocol, LLMError
from mcp_nexus.control.openai_client import OpenAICompatibleClient, resolve_api_key
from support.fake_openai import error, fake_openai, garbage, text, tool_call

from .helpers import API_KEY

pytestmark = pytest.mark.timeout(30)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "cortex__add_entity",
            "description": "Record a new entity",
            "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
        },
    }
]


def client(url: str, **settings: object) -> OpenAICompatibleClient:
    return OpenAICompatibleClient(LLMSettings(base_url=url, api_key=API_KEY, model="qwen3-max", **settings))  # type: ignore[arg-type]


async def test_chat_and_function_calls_over_the_wire() -> None:
    with fake_openai(
        [text("hello"), tool_call("cortex__add_entity", {"id": "fastapi"}, content="adding")]
    ) as fake:
        llm = client(fake.base_url, temperature=0.2)
        assert isinstance(llm, LLMClientProtocol)
        assert await llm.chat_completion([{"role": "user", "content": "hi"}], max_tokens=50) == "hello"
        answer = await llm.function_call_completion([{"role": "user", "content": "add fastapi"}], TOOLS)
        await llm.close()
    assert answer.content == "adding"
    assert [(c.name, c.arguments) for c in answer.tool_calls] == [("cortex__add_entity", '{"id": "fastapi"}')]
    assert answer.finish_reason == "tool_calls"
    first, second = fake.requests
    assert first["model"] == "qwen3-max" and first["max_tokens"] == 50 and first["temperature"] == 0.2
    assert "tools" not in first
    assert second["tools"] == TOOLS and second["tool_choice"] == "auto"


async def test_retries_429_and_5xx_with_backoff_then_succeeds() -> None:
    with fake_openai([error(429), error(503), text("at last")]) as fake:
        llm = client(fake.base_url, max_retries=2)
        assert await llm.chat_completion([{"role": "user", "content": "hi"}]) == "at last"
        await llm.close()
    assert len(fake.requests) == 3


async def test_failures_are_llm_errors_that_never_show_the_key(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with fake_openai([error(500), error(500)], api_key="another-key-entirely-9876") as fake:
        llm = client(fake.base_url, max_retries=0)
        with pytest.raises(LLMError, match="401") as refused:
            await llm.chat_completion([{"role": "user", "content": "hi"}])
        assert API_KEY not in str(refused.value) and API_KEY not in repr(llm)
        fake.api_key = API_KEY
        with pytest.raises(LLMError, match="500: scripted failure"):
            await llm.chat_completion([{"role": "user", "content": "hi"}])
        await llm.close()
    assert API_KEY not in caplog.text


async def test_an_answer_that_is_not_a_completion_is_an_llm_error() -> None:
    with fake_openai([garbage("this is not json")]) as fake:
        llm = client(fake.base_url)
        with pytest.raises(LLMError):
            await llm.function_call_completion([{"role": "user", "content": "hi"}], TOOLS)
        await llm.close()


async def test_unreachable_endpoint_is_a_clear_error() -> None:
    with fake_openai([]) as fake:
        url = fake.base_url
    llm = client(url, timeout=2, max_retries=0)
    with pytest.raises(LLMError, match="cannot reach the model endpoint"):
        await llm.chat_completion([{"role": "user", "content": "hi"}])
    await llm.close()


def test_api_key_comes_from_config_then_env() -> None:
    settings = LLMSettings(base_url="http://x/v1")
    assert resolve_api_key(settings, {"NEXUS_LLM_API_KEY": "from-env"}) == "from-env"
    assert resolve_api_key(settings, {"OPENAI_API_KEY": "openai-env"}) == "openai-env"
    assert resolve_api_key(settings, {}) == "no-key"
    assert (
        resolve_api_key(LLMSettings(base_url="http://x/v1", api_key="cfg"), {"OPENAI_API_KEY": "e"}) == "cfg"
    )
    assert "cfg" not in repr(LLMSettings(base_url="http://x/v1", api_key="cfg"))
