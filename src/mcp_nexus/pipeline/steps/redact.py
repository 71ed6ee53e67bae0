"""The guardrail step `redact`: secrets and personal data in arguments and results (pipeline/steps/redaction.py).

Shipped with Nexus and registered like a plugin's step (pyproject.toml, `mcp_nexus.steps`).
Its block, `steps.redact`, may be set in `gateway`, per server and per tool (`tool_config`):

    arguments: off | report | on    default off: what a client sends reaches the server as sent
    results:   off | report | on    default off: results reach the client as the server sent them
    kinds:     [email, phone, ...]  default all (pipeline/steps/redaction.py lists them)

`on` replaces each match by `[REDACTED:<kind>]`; `report` leaves the call unchanged and only
counts (metrics: `nexus_redactions_total{kind,where,mode,server}`, and one log line per call).
Off by default so that existing behaviour is unchanged; a tool it is off for has no step in
its chain at all (`applies_to`).

It sits directly inside `offload` (after: offload): a server's raw result is redacted before
it can be offloaded to a file or kept by the cache, and arguments are redacted after they were
validated against the tool's schema, just before they travel to the server.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator
from typing import Any, Literal

import mcp_types as types
from pydantic import BaseModel, ConfigDict, Field, field_validator

from mcp_nexus.pipeline.call import CallNext, ToolCall
from mcp_nexus.pipeline.step_context import StepContext
from mcp_nexus.pipeline.steps.redaction import KINDS, redact_text
from mcp_nexus.plugins.specs import StepSpec

logger = logging.getLogger(__name__)

Mode = Literal["off", "report", "on"]


class RedactSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    arguments: Mode = Field(default="off", description="redact what clients send to servers")
    results: Mode = Field(default="off", description="redact what servers answer")
    kinds: list[str] | None = Field(default=None, description="the kinds looked for; default all")

    @field_validator("kinds")
    @classmethod
    def _check_kinds(cls, value: list[str] | None) -> list[str] | None:
        unknown = [kind for kind in value or [] if kind not in KINDS]
        if unknown:
            raise ValueError(f"unknown kinds {unknown} (known: {', '.join(KINDS)})")
        return value

    @property
    def active(self) -> bool:
        return self.arguments != "off" or self.results != "off"


_OFF = RedactSettings()


def settings_of(call: ToolCall) -> RedactSettings:
    policy = call.policy
    found = getattr(policy, "steps", {}).get("redact") if policy is not None else None
    return found if isinstance(found, RedactSettings) else _OFF


def _redact_value(value: Any, kinds: frozenset[str] | None, found: Counter[str]) -> Any:
    """Strings anywhere in a JSON value, redacted; the same object back when nothing matched."""
    if isinstance(value, str):
        text, counts = redact_text(value, kinds)
        if counts:
            found.update(counts)
            return text
        return value
    if isinstance(value, dict):
        changed = {k: _redact_value(v, kinds, found) for k, v in value.items()}
        return changed if any(changed[k] is not value[k] for k in value) else value
    if isinstance(value, list):
        items = [_redact_value(v, kinds, found) for v in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    return value


def _redact_result(
    result: types.CallToolResult, kinds: frozenset[str] | None, found: Counter[str]
) -> types.CallToolResult:
    content: list[Any] = []
    changed = False
    for item in result.content:
        if isinstance(item, types.TextContent):
            text, counts = redact_text(item.text, kinds)
            if counts:
                found.update(counts)
                item = item.model_copy(update={"text": text})
                changed = True
        content.append(item)
    structured = result.structured_content
    if structured is not None:
        # Structured content usually mirrors the text (the SDK sends both): count each kind by
        # whichever holds more of it, not by their sum.
        in_structured: Counter[str] = Counter()
        redacted = _redact_value(structured, kinds, in_structured)
        changed = changed or redacted is not structured
        structured = redacted
        found |= in_structured
    if not changed:
        return result
    return result.model_copy(update={"content": content, "structured_content": structured})


class RedactStep:
    """Counts per (kind, where, mode, server); the values found are never kept or logged."""

    name = "redact"

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str, str, str]] = Counter()
        # The same per tool for the dashboard (server, tool, kind, where, mode); kept apart so that
        # /metrics keeps one series per server, not per tool. Tools are the catalog's: bounded.
        self.by_tool: Counter[tuple[str, str, str, str, str]] = Counter()

    def applies_to(self, policy: Any) -> bool:
        found = getattr(policy, "steps", {}).get("redact")
        return isinstance(found, RedactSettings) and found.active

    async def __call__(self, call: ToolCall, call_next: CallNext) -> Any:
        settings = settings_of(call)
        if not settings.active or call.method != "tools/call":
            return await call_next(call)
        kinds = frozenset(settings.kinds) if settings.kinds is not None else None
        server = getattr(call.policy, "server", None) or "-"
        if settings.arguments != "off":
            found: Counter[str] = Counter()
            redacted = _redact_value(call.arguments, kinds, found)
            if found:
                self._count(call, found, "arguments", settings.arguments, server)
                if settings.arguments == "on":
                    call.arguments = redacted
        outcome = await call_next(call)
        if settings.results != "off" and isinstance(outcome, types.CallToolResult):
            found = Counter()
            redacted_result = _redact_result(outcome, kinds, found)
            if found:
                self._count(call, found, "results", settings.results, server)
                if settings.results == "on":
                    return redacted_result
        return outcome

    def _count(self, call: ToolCall, found: Counter[str], where: str, mode: str, server: str) -> None:
        for kind, count in found.items():
            self.counts[(kind, where, mode, server)] += count
            self.by_tool[(server, call.name, kind, where, mode)] += count
        summary = ", ".join(f"{count} {kind}" for kind, count in sorted(found.items()))
        verb = "redacted" if mode == "on" else "found (report only)"
        logger.info("redact: %s of %s: %s %s", where, call.name, summary, verb)

    def rows(self) -> list[dict[str, Any]]:
        """The counts per server, tool, kind, where and mode (never a value found), for the dashboard."""
        return [
            {"server": server, "tool": tool, "kind": kind, "where": where, "mode": mode, "count": count}
            for (server, tool, kind, where, mode), count in sorted(self.by_tool.items())
        ]

    def metric_families(self) -> Iterator[Any]:
        """`nexus_redactions_total{kind,where,mode,server}` for /metrics (frontends/metrics/step_metrics.py)."""
        from prometheus_client.core import CounterMetricFamily

        family = CounterMetricFamily(
            "nexus_redactions",
            "secrets and personal data found by the redact step (values never recorded)",
            labels=["kind", "where", "mode", "server"],
        )
        for (kind, where, mode, server), count in sorted(self.counts.items()):
            family.add_metric([kind, where, mode, server], count)
        yield family


def _build(context: StepContext) -> RedactStep:
    # Always built: a reload may turn it on; tools it is off for leave it out of their chain.
    return RedactStep()


REDACT = StepSpec(
    "redact",
    _build,
    config_model=RedactSettings,
    after="offload",
    description="redacts secrets and personal data in arguments and results (off by default)",
)
