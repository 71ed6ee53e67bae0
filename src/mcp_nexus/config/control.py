"""Settings of the control plane: the LLM it asks (`llm:`) and how goals are carried out (`control:`).

    llm:
      base_url: https://dashscope.aliyuncs.com/compatible-mode/v1   # or Ollama, vLLM, OpenAI
      api_key: ${DASHSCOPE_API_KEY}      # or leave out: read from $NEXUS_LLM_API_KEY / $OPENAI_API_KEY
      model: qwen3-max
    control:
      mode: plan                          # plan | goal
      max_steps: 12

The control plane is built only when `llm.base_url` is set or `control.enabled` is true
(without an LLM, goals are routed by the rule router: tags and keywords).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from mcp_nexus.config.schema_base import Strict

DEFAULT_API_KEY_ENV = "NEXUS_LLM_API_KEY"


class LLMSettings(Strict):
    """An OpenAI-compatible chat-completions endpoint (OpenAI, DashScope compatible mode, Ollama, vLLM)."""

    base_url: str | None = Field(default=None, description="e.g. http://127.0.0.1:11434/v1 (Ollama)")
    api_key: str | None = Field(
        default=None, repr=False, description="never logged; default from api_key_env"
    )
    api_key_env: str = Field(
        default=DEFAULT_API_KEY_ENV,
        description="env variable read when api_key is not set (then OPENAI_API_KEY)",
    )
    model: str = Field(default="qwen3-max", min_length=1)
    timeout: float = Field(default=60.0, gt=0, description="seconds one request may take")
    max_retries: int = Field(
        default=3, ge=0, le=10, description="retries on 408/409/429/5xx and connection errors, with backoff"
    )
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1)
    extra_body: dict[str, Any] = Field(
        default_factory=dict, description="sent as is, e.g. {enable_thinking: false} for Qwen"
    )


class ControlSettings(Strict):
    """How the executor carries out goals (docs/CONTROL.md, "Executor and tasks")."""

    enabled: bool = Field(default=False, description="build the control plane even without llm.base_url")
    mode: Literal["plan", "goal"] = Field(default="plan", description="plan-driven (default) or goal-driven")
    max_steps: int = Field(default=12, ge=1, le=200, description="tool calls one task may make")
    max_revisions: int = Field(default=2, ge=0, le=20, description="times a plan may be revised")
    task_deadline: float = Field(default=300.0, gt=0, description="seconds one task may run in total")
    step_retries: int = Field(
        default=1, ge=0, le=10, description="extra attempts of a failed tool call before the step fails"
    )
    retry_backoff: float = Field(
        default=0.5, ge=0, description="seconds before a step's first retry; doubles"
    )
    workers: int = Field(default=1, ge=1, le=32, description="tasks run at once")
    queue_path: str | None = Field(
        default=None, description="sqlite file of the task queue; default <data dir>/control/tasks.sqlite"
    )
    history: int = Field(default=3, ge=0, le=20, description="past steps the router sees (the design: 3)")
    max_tools: int = Field(
        default=40, ge=1, le=128, description="tools offered to the LLM per decision (OpenAI caps at 128)"
    )
    decision_cache: bool = Field(default=True, description="same goal + same tool set -> same decision")
    run_goal_wait: float = Field(
        default=20.0,
        ge=0,
        description="seconds nexus.run_goal waits for the end before answering with the task id",
    )
    environment: dict[str, Any] = Field(
        default_factory=dict, description="context every task sees, e.g. {devices: [...]} for Home Assistant"
    )
