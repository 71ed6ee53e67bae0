"""An `LLMClientProtocol` that records every exchange of one task (the executor's "every LLM exchange recorded")."""

from __future__ import annotations

import time
from typing import Any

from mcp_nexus.control.llm_protocol import LLMClientProtocol, LLMError, LLMResponse, Message
from mcp_nexus.control.task import LLMExchange, UnifiedTask

MAX_RECORDED_CHARS = 8000
"""A message longer than this is cut in the record (the tool list is not recorded at all): tasks stay small."""


def _trimmed(messages: list[Message]) -> list[dict[str, Any]]:
    out = []
    for message in messages:
        copy = dict(message)
        content = copy.get("content")
        if isinstance(content, str) and len(content) > MAX_RECORDED_CHARS:
            copy["content"] = (
                content[:MAX_RECORDED_CHARS] + f"... [{len(content) - MAX_RECORDED_CHARS} more chars]"
            )
        out.append(copy)
    return out


class RecordingLLM:
    def __init__(self, llm: LLMClientProtocol, task: UnifiedTask, purpose: str = "route") -> None:
        self.llm = llm
        self.task = task
        self.purpose = purpose

    def _record(self, messages: list[Message], started: float) -> LLMExchange:
        exchange = LLMExchange(purpose=self.purpose, messages=_trimmed(messages), started_at=started)  # type: ignore[arg-type]
        self.task.exchanges.append(exchange)
        return exchange

    async def chat_completion(
        self,
        messages: list[Message],
        temperature: float | None = None,
        max_tokens: int | None = None,
        **kwargs: Any,
    ) -> str:
        started = time.time()
        exchange = self._record(messages, started)
        try:
            text = await self.llm.chat_completion(messages, temperature, max_tokens, **kwargs)
        except LLMError as exc:
            exchange.error = str(exc)
            raise
        finally:
            exchange.duration = round(time.time() - started, 4)
        exchange.response = {"content": text[:MAX_RECORDED_CHARS]}
        return text

    async def function_call_completion(
        self, messages: list[Message], tools: list[dict[str, Any]], **kwargs: Any
    ) -> LLMResponse:
        started = time.time()
        exchange = self._record(messages, started)
        try:
            response = await self.llm.function_call_completion(messages, tools, **kwargs)
        except LLMError as exc:
            exchange.error = str(exc)
            raise
        finally:
            exchange.duration = round(time.time() - started, 4)
        exchange.response = {
            "content": response.content,
            "tool_calls": [
                {"name": c.name, "arguments": c.arguments[:MAX_RECORDED_CHARS]} for c in response.tool_calls
            ],
            "tools_offered": len(tools),
        }
        return response
