"""`McpRouter`: goal -> `RouterDecision` by LLM function calling. It decides; it never calls a tool or retries.

The tools offered come from a `ToolSource` (narrowed by its search, or by name/description
similarity, when there are more than `max_tools`), as function definitions with legal names
(function_schemas.py). The model's answer becomes a decision with confidence 0.8 when it
calls a tool and 0.3 with `tool=None` when it calls none (done, or nothing fits), as the
design says. An answer that cannot be used (arguments that are not a JSON object, a tool
never offered, argument names the tool does not take) becomes a decision with `error` set
and confidence 0: the executor turns it into a failed step that says what was wrong.
Home Assistant names in the arguments ("客厅的灯") are mapped to entity ids (home_assistant.py).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from rapidfuzz import fuzz

from mcp_nexus.control import home_assistant
from mcp_nexus.control.decision import CONFIDENCE_TOOL, RouterContext, RouterDecision
from mcp_nexus.control.decision_cache import DecisionCache, decision_key
from mcp_nexus.control.function_schemas import function_tools
from mcp_nexus.control.llm_protocol import LLMClientProtocol, LLMResponse, Message
from mcp_nexus.control.tool_source import SearchableToolSource, ToolInfo, ToolSource

logger = logging.getLogger(__name__)

DEFAULT_MAX_TOOLS = 40

SYSTEM_PROMPT = """You are the router of an MCP gateway: you choose the next tool call for a goal.
Call exactly one tool when one advances the goal. Call no tool, and answer in one sentence,
when the goal is already achieved (see the history) or when no tool fits.
Parameter rules:
- Use only the parameters the tool's schema defines; give every required one.
- Take values from the goal, the history (earlier results) and the environment; never invent ids.
- Home Assistant: map friendly names and areas (e.g. "客厅的灯", "living room light") to the
  entity_id from the device list; a cover position is 0 (closed) to 100 (fully open)."""


def select_tools(source: ToolSource, goal: str, limit: int) -> list[ToolInfo]:
    """At most `limit` tools for this goal: all when they fit, else the source's search or the most similar."""
    tools = source.tools()
    if len(tools) <= limit:
        return tools
    if isinstance(source, SearchableToolSource):
        found = source.search(goal, limit)
        if found:
            return found
    lowered = goal.lower()
    scored = sorted(
        tools,
        key=lambda t: (
            -fuzz.token_set_ratio(lowered, f"{t.tool_name} {t.description} {' '.join(t.tags)}".lower())
        ),
    )
    return scored[:limit]


def unknown_argument_names(arguments: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """Argument names the schema does not define (when it lists its properties)."""
    properties = schema.get("properties")
    if (
        not isinstance(properties, dict)
        or not properties
        or schema.get("additionalProperties") not in (None, False)
    ):
        return []
    return sorted(name for name in arguments if name not in properties)


def missing_required(arguments: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    required = schema.get("required")
    return sorted(name for name in required if name not in arguments) if isinstance(required, list) else []


def _history_lines(history: list[dict[str, Any]]) -> str:
    if not history:
        return "(none yet)"
    lines = []
    for item in history:
        outcome = "ok" if item.get("ok") else f"failed: {item.get('error')}"
        result = str(item.get("result") or "")[:600]
        lines.append(
            f"- step {item.get('index')}: {item.get('tool') or '(no tool)'} {json.dumps(item.get('arguments') or {}, ensure_ascii=False)}"
            f" -> {outcome}{': ' + result if result and item.get('ok') else ''}"
        )
    return "\n".join(lines)


def router_messages(context: RouterContext) -> list[Message]:
    environment = {
        k: v for k, v in context.environment.items() if k not in ("devices", "states", "home_assistant")
    }
    parts = [
        f"Goal: {context.goal}",
        f"Step: {context.current_step}",
        f"History:\n{_history_lines(context.history)}",
    ]
    if environment:
        parts.append(f"Environment: {json.dumps(environment, ensure_ascii=False, default=str)[:2000]}")
    devices = home_assistant.devices_from(context.environment)
    if devices:
        parts.append(f"Devices:\n{home_assistant.describe_for_prompt(context.goal, devices)}")
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "\n".join(parts)}]


class McpRouter:
    def __init__(
        self,
        llm: LLMClientProtocol,
        tools: ToolSource,
        *,
        max_tools: int = DEFAULT_MAX_TOOLS,
        cache: DecisionCache | None = None,
    ) -> None:
        self.llm = llm
        self.tools = tools
        self.max_tools = max_tools
        self.cache = cache

    async def route(self, context: RouterContext) -> RouterDecision:
        key = decision_key(context, self.tools.version()) if self.cache is not None else ""
        if self.cache is not None:
            cached = self.cache.get(key)
            if cached is not None:
                cached.reasoning = f"(cached) {cached.reasoning}"
                return cached
        offered = select_tools(self.tools, context.goal, self.max_tools)
        functions, names = function_tools(offered)
        response = await self.llm.function_call_completion(router_messages(context), functions)
        decision = self.decide(response, offered, names.tool_for, context)
        if self.cache is not None:
            self.cache.put(key, decision)
        return decision

    def decide(
        self, response: LLMResponse, offered: list[ToolInfo], tool_for: Any, context: RouterContext
    ) -> RouterDecision:
        """The decision an answer stands for (pure: no I/O), or an `error` decision saying what is wrong with it."""
        if not response.tool_calls:
            return RouterDecision.nothing((response.content or "the model called no tool").strip())
        call = response.tool_calls[0]
        name = tool_for(call.name)
        by_name = {tool.tool_name: tool for tool in offered}
        if name is None or name not in by_name:
            known = ", ".join(sorted(by_name)[:20])
            return RouterDecision.invalid(
                f"the model called unknown tool {call.name!r}; offered were: {known}"
            )
        tool = by_name[name]
        try:
            arguments = json.loads(call.arguments) if call.arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return RouterDecision.invalid(
                f"the model's arguments for {name} are not valid JSON ({exc.msg} at position {exc.pos}): "
                f"{call.arguments[:200]!r}",
                tool=name,
            )
        if not isinstance(arguments, dict):
            return RouterDecision.invalid(
                f"the model's arguments for {name} must be a JSON object, got {type(arguments).__name__}",
                tool=name,
            )
        devices = home_assistant.devices_from(context.environment)
        arguments, notes = home_assistant.map_arguments(arguments, context.goal, devices)
        invented = unknown_argument_names(arguments, tool.input_schema)
        if invented:
            allowed = ", ".join(sorted(tool.input_schema.get("properties", {})))
            return RouterDecision.invalid(
                f"the model passed arguments {', '.join(invented)} that {name} does not take (it takes: {allowed})",
                tool=name,
                arguments=arguments,
            )
        missing = missing_required(arguments, tool.input_schema)
        if missing:
            return RouterDecision.invalid(
                f"the model left out required arguments of {name}: {', '.join(missing)}",
                tool=name,
                arguments=arguments,
            )
        reasoning = (response.content or f"the model chose {name}").strip()
        if len(response.tool_calls) > 1:
            reasoning += f" ({len(response.tool_calls) - 1} further call(s) left for the next steps)"
        if notes:
            reasoning += "; mapped " + "; ".join(notes)
        return RouterDecision(tool.server_id, name, arguments, CONFIDENCE_TOOL, reasoning)
