"""What the control plane needs from a language model: `LLMClientProtocol`, as the controller design has it.

Any object with these two coroutines can be injected (the router and the executor depend
on nothing else): `OpenAICompatibleClient` (openai_client.py) for OpenAI, DashScope's
compatible mode (qwen3-max), Ollama or vLLM, or a client of your own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

Message = dict[str, Any]
"""One chat message as the chat-completions API takes it: {"role": ..., "content": ..., ...}."""


@dataclass(frozen=True, slots=True)
class LLMToolCall:
    """One function call the model asked for; `arguments` is the raw JSON text the model wrote."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class LLMResponse:
    """The answer of `function_call_completion`: tool calls, or plain content when the model calls none."""

    content: str | None = None
    tool_calls: list[LLMToolCall] = field(default_factory=list)
    finish_reason: str | None = None


class LLMError(Exception):
    """The model could not be asked (unreachable, refused, out of retries); the message says why, never the key."""


@runtime_checkable
class LLMClientProtocol(Protocol):
    async def chat_completion(
        self,
        messages: list[Message],
        temperature: float | None = None,
        max_tokens: int | None = None,
        **kwargs: Any,
    ) -> str:
        """Text generation / reasoning: the assistant's text."""
        ...

    async def function_call_completion(
        self, messages: list[Message], tools: list[dict[str, Any]], **kwargs: Any
    ) -> LLMResponse:
        """Tool selection: `tools` in the chat-completions function format; tool calls or content."""
        ...
