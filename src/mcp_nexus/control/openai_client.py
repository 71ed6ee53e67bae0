"""`OpenAICompatibleClient`: the `LLMClientProtocol` over the official `openai` SDK.

Works with every server that speaks chat completions: OpenAI, DashScope compatible mode
(`https://dashscope.aliyuncs.com/compatible-mode/v1`, model qwen3-max), Ollama
(`http://127.0.0.1:11434/v1`), vLLM. Retries with exponential backoff on 408/409/429/5xx and
connection errors are the SDK's own (`max_retries`); the API key is passed to the SDK and
never logged or shown (errors are re-raised as `LLMError` with the status and the server's
message only).
"""

from __future__ import annotations

import logging
import os
from typing import Any

import openai

from mcp_nexus.config.control import LLMSettings
from mcp_nexus.config.secrets import SecretRedactor
from mcp_nexus.control.llm_protocol import LLMError, LLMResponse, LLMToolCall, Message

logger = logging.getLogger(__name__)

NO_KEY = "no-key"
"""Sent when no key is configured: local servers (Ollama, vLLM) ignore it, the SDK insists on one."""


def resolve_api_key(settings: LLMSettings, env: dict[str, str] | None = None) -> str:
    """The configured key, else `$<api_key_env>`, else `$OPENAI_API_KEY`, else a placeholder for local servers."""
    environ = os.environ if env is None else env
    return settings.api_key or environ.get(settings.api_key_env) or environ.get("OPENAI_API_KEY") or NO_KEY


class OpenAICompatibleClient:
    def __init__(self, settings: LLMSettings, *, api_key: str | None = None) -> None:
        if not settings.base_url:
            raise ValueError(
                "llm.base_url is not set: name the OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1"
            )
        self.settings = settings
        self.model = settings.model
        key = api_key or resolve_api_key(settings)
        # An endpoint may echo the key it was sent ("Incorrect API key provided: sk-..."): never repeat it.
        self._redactor = SecretRedactor([] if key == NO_KEY else [key])
        self._client = openai.AsyncOpenAI(
            base_url=settings.base_url,
            api_key=key,
            timeout=settings.timeout,
            max_retries=settings.max_retries,
        )

    def __repr__(self) -> str:  # never the key
        return f"OpenAICompatibleClient(base_url={self.settings.base_url!r}, model={self.model!r})"

    async def close(self) -> None:
        await self._client.close()

    async def chat_completion(
        self,
        messages: list[Message],
        temperature: float | None = None,
        max_tokens: int | None = None,
        **kwargs: Any,
    ) -> str:
        completion = await self._create(messages, temperature=temperature, max_tokens=max_tokens, **kwargs)
        return completion.choices[0].message.content or ""

    async def function_call_completion(
        self, messages: list[Message], tools: list[dict[str, Any]], **kwargs: Any
    ) -> LLMResponse:
        if tools:
            kwargs.setdefault("tool_choice", "auto")
            kwargs["tools"] = tools
        completion = await self._create(messages, **kwargs)
        choice = completion.choices[0]
        calls = [
            LLMToolCall(id=call.id, name=call.function.name, arguments=call.function.arguments or "")
            for call in choice.message.tool_calls or []
            if getattr(call, "function", None) is not None
        ]
        return LLMResponse(
            content=choice.message.content, tool_calls=calls, finish_reason=choice.finish_reason
        )

    async def _create(
        self,
        messages: list[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        **kwargs: Any,
    ) -> Any:
        settings = self.settings
        temperature = settings.temperature if temperature is None else temperature
        max_tokens = settings.max_tokens if max_tokens is None else max_tokens
        extra_body = {**settings.extra_body, **kwargs.pop("extra_body", {})}
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        try:
            return await self._send(messages, temperature, extra_body, kwargs)
        except LLMError as exc:  # redacted before it is cut: half a key would slip through
            raise LLMError(_cut(self._redactor.redact(str(exc)), MAX_ERROR_CHARS)) from None

    async def _send(
        self, messages: list[Message], temperature: float | None, extra_body: dict[str, Any], kwargs: Any
    ) -> Any:
        settings = self.settings
        try:
            completion = await self._client.chat.completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                temperature=temperature,
                stream=False,
                extra_body=extra_body or None,
                **kwargs,
            )
        except openai.APIStatusError as exc:
            raise LLMError(f"the model endpoint answered {exc.status_code}: {_server_message(exc)}") from None
        except openai.APITimeoutError:
            raise LLMError(f"the model endpoint did not answer within {settings.timeout:g} s") from None
        except openai.APIConnectionError as exc:
            raise LLMError(
                f"cannot reach the model endpoint {settings.base_url}: {exc.__cause__ or exc}"
            ) from None
        except openai.APIError as exc:  # e.g. an answer that is not a chat completion
            raise LLMError(f"the model endpoint gave an unusable answer: {exc.message}") from None
        except ValueError as exc:  # a body that is not JSON at all
            raise LLMError(f"the model endpoint's answer is not JSON: {exc}") from None
        if not getattr(completion, "choices", None):
            raise LLMError("the model endpoint answered without choices")
        return completion


def _server_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])[:_MAX_READ]
    return str(exc.message)[:_MAX_READ]


MAX_ERROR_CHARS = 600
"""The longest LLM error message kept (the endpoint's message is most of it)."""
_MAX_READ = 64 * 1024


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
