"""`RuleRouter`: routing without an LLM (the design's "规则 + LLM 混合"), by tags and keywords.

Used when no model is configured, and usable beside the LLM router. It scores each tool by
how well the goal's words match its name, description and tags (English words and Chinese
characters alike, via rapidfuzz), fills only the arguments it can fill with certainty (an
`entity_id` from the Home Assistant devices, a free-text `query`/`text` with the goal),
and calls no tool when it cannot fill a required argument or when the goal already had a
successful call. Its confidence is 0.5: a keyword match is weaker evidence than a model's choice.
"""

from __future__ import annotations

import re
from typing import Any

from rapidfuzz import fuzz

from mcp_nexus.control import home_assistant
from mcp_nexus.control.decision import RouterContext, RouterDecision
from mcp_nexus.control.tool_source import ToolInfo, ToolSource

CONFIDENCE_RULE = 0.5
MIN_SCORE = 55.0
FREE_TEXT_ARGUMENTS = ("query", "text", "goal", "q", "question", "prompt", "message")

# Tag keywords (English and Chinese) as the tool index extracts them: a goal naming one favours its tools.
TAG_WORDS: dict[str, tuple[str, ...]] = {
    "navigation": ("navigate", "go to", "move to", "导航", "前往", "去"),
    "notification": ("notify", "send", "message", "remind", "通知", "提醒", "发送"),
    "emergency": ("emergency", "alarm", "help", "紧急", "报警", "求救"),
    "perception": ("see", "camera", "detect", "sense", "看", "摄像", "识别", "感知"),
}


# Chinese verbs a tool name spells in English: "打开客厅的灯" must find `turn_on`.
ACTION_WORDS: dict[str, str] = {
    "打开": "turn on open",
    "开启": "turn on",
    "关闭": "turn off close",
    "关掉": "turn off",
    "关上": "turn off close",
    "搜索": "search find",
    "查找": "search find",
    "查询": "search get query",
    "记录": "add record",
    "添加": "add create",
    "连接": "connect",
    "设置": "set",
    "调到": "set",
    "导航": "navigate",
    "读取": "read get",
}


def with_english_actions(goal: str) -> str:
    extra = [english for chinese, english in ACTION_WORDS.items() if chinese in goal]
    return " ".join([goal, *extra])


def _terms(text: str) -> str:
    """Words, with tool-name separators split and CJK characters spaced, for token matching."""
    text = re.sub(r"[._\-/]+", " ", text.lower())
    return re.sub(r"([\u4e00-\u9fff])", r" \1 ", text)


def score_tool(goal: str, tool: ToolInfo) -> float:
    goal_terms = _terms(with_english_actions(goal))
    haystack = _terms(f"{tool.tool_name} {tool.description} {' '.join(tool.tags)}")
    bare_name = _terms(tool.tool_name.rsplit(".", 1)[-1])  # the namespace says nothing about the action
    score = float(fuzz.token_set_ratio(goal_terms, haystack)) * 0.6
    score += float(fuzz.partial_ratio(bare_name, goal_terms)) * 0.4
    for tag, words in TAG_WORDS.items():
        if tag in tool.tags and any(word in goal.lower() for word in words):
            score += 25.0
    return score


class RuleRouter:
    def __init__(self, tools: ToolSource) -> None:
        self.tools = tools

    async def route(self, context: RouterContext) -> RouterDecision:
        if any(item.get("ok") and item.get("goal") == context.goal for item in context.history):
            return RouterDecision.nothing("the goal already had a successful call")
        devices = home_assistant.devices_from(context.environment)
        matched = home_assistant.match_devices(context.goal, devices, limit=1) if devices else []
        target_domain = matched[0].device.domain if matched else None
        ranked = sorted(
            (
                (score_tool(context.goal, tool) + self._device_fit(tool, target_domain), tool)
                for tool in self.tools.tools()
            ),
            key=lambda p: -p[0],
        )
        for score, tool in ranked[:5]:
            if score < MIN_SCORE:
                break
            arguments = self._arguments(tool, context.goal, devices)
            if arguments is not None:
                return RouterDecision(
                    tool.server_id,
                    tool.tool_name,
                    arguments,
                    CONFIDENCE_RULE,
                    f"keyword match {score:.0f} with {tool.tool_name} (rule router, no LLM)",
                )
        best = f"; best was {ranked[0][1].tool_name} ({ranked[0][0]:.0f})" if ranked else ""
        return RouterDecision.nothing(
            f"no tool matches the goal's keywords with arguments the rules can fill{best}"
        )

    @staticmethod
    def _device_fit(tool: ToolInfo, domain: str | None) -> float:
        """A cover is moved by position, everything else is switched: favour the tool that fits the device."""
        properties = tool.input_schema.get("properties") or {}
        takes_position = "position" in properties or "current_position" in properties
        if domain is None or not any(key in properties for key in home_assistant.ENTITY_KEYS):
            return 0.0
        if domain == "cover":
            return 30.0 if takes_position else -10.0
        return -30.0 if takes_position else 0.0

    @staticmethod
    def _arguments(tool: ToolInfo, goal: str, devices: list[home_assistant.Device]) -> dict[str, Any] | None:
        properties = tool.input_schema.get("properties") or {}
        required = tool.input_schema.get("required") or []
        arguments: dict[str, Any] = {}
        for name in properties:
            if name in home_assistant.ENTITY_KEYS and devices:
                found = home_assistant.match_devices(goal, devices, limit=1)
                if found:
                    arguments[name] = found[0].device.entity_id
            elif name in FREE_TEXT_ARGUMENTS:
                arguments[name] = goal
            elif name in ("position", "current_position"):
                position = home_assistant.cover_position(goal)
                if position is not None:
                    arguments[name] = position
        if any(name not in arguments for name in required):
            return None
        return arguments
