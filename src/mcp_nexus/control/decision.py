"""The router's input and output, as the controller design names them: `RouterContext` -> `RouterDecision`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

CONFIDENCE_TOOL = 0.8
"""The design's default confidence when the LLM picks a tool."""
CONFIDENCE_NONE = 0.3
"""When the LLM calls no tool: it thinks the goal is done, or that no tool fits."""
CONFIDENCE_INVALID = 0.0
"""When the model's answer cannot be used (invalid JSON, unknown tool, arguments the tool does not take)."""

HISTORY_SIZE = 3
"""The design's RouterContext carries the last three steps."""


@dataclass
class RouterContext:
    goal: str
    current_step: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)  # the last HISTORY_SIZE steps
    environment: dict[str, Any] = field(default_factory=dict)  # e.g. {"devices": [...]} (Home Assistant)


@dataclass
class RouterDecision:
    server_id: str | None
    tool: str | None  # the gateway's (namespaced) tool name; None: nothing to call
    arguments: dict[str, Any]
    confidence: float
    reasoning: str
    error: str | None = None  # set when the model's answer was unusable: says exactly what was wrong

    @property
    def usable(self) -> bool:
        return self.error is None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RouterDecision:
        return cls(
            server_id=data.get("server_id"),
            tool=data.get("tool"),
            arguments=dict(data.get("arguments") or {}),
            confidence=float(data.get("confidence", 0.0)),
            reasoning=str(data.get("reasoning", "")),
            error=data.get("error"),
        )

    @classmethod
    def nothing(cls, reasoning: str) -> RouterDecision:
        return cls(None, None, {}, CONFIDENCE_NONE, reasoning)

    @classmethod
    def invalid(
        cls, error: str, *, tool: str | None = None, arguments: dict[str, Any] | None = None
    ) -> RouterDecision:
        return cls(None, tool, arguments or {}, CONFIDENCE_INVALID, error, error=error)
