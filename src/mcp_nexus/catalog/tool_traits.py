"""`blocking` and `cost_estimate` of a tool: the operator's word first, then annotations, then its name.

Order of evidence (the first that speaks wins, per trait):
1. `cost:` / `blocking:` in the tool's `tool_config` entry, then in its server entry;
2. annotations: `readOnlyHint` -> low cost and not blocking; `destructiveHint` -> high cost;
3. words: moving a robot ("navigate", "move to", "导航", ...) blocks for a long time and is
   costly; waiting, downloading, installing, training block; reads (get, list, search, 查询)
   are cheap; anything else that changes state is medium.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcp_nexus.catalog.index_entry import CostEstimate
from mcp_nexus.catalog.tags import name_words
from mcp_nexus.config.schema import CallPolicy, ServerConfig

_MOTION = re.compile(
    r"\b(navigat\w*|move to|move robot|drive( to)?|go to|goto|travel|dock|undock|follow|patrol|"
    r"grasp|pick( up)?|place|arm|gripper)\b|导航|移动|前往|行走|抓取|巡逻",
    re.IGNORECASE,
)
_LONG_RUNNING = re.compile(
    r"\b(wait\w*|sleep|long[- ]running|until|download\w*|install\w*|build|compile|train\w*|"
    r"record\w* (audio|video)|scan\w*)\b|等待|下载|安装|训练|录制|扫描",
    re.IGNORECASE,
)
_READ_VERBS = re.compile(
    r"^(get|list|read|search|find|query|show|describe|fetch|lookup|look up|count|check|status|stat|"
    r"open|view|inspect|diff|log)\b|^(查询|获取|读取|搜索|查看|列出)",
    re.IGNORECASE,
)
_TIME_PARAMS = {"timeout", "duration", "wait", "wait_seconds", "duration_seconds"}


@dataclass(frozen=True, slots=True)
class ToolTraits:
    blocking: bool
    cost_estimate: CostEstimate


def _configured(levels: list[CallPolicy | None], key: str) -> Any:
    for level in levels:
        if level is not None and getattr(level, key) is not None:
            return getattr(level, key)
    return None


def tool_traits(
    server: ServerConfig | None,
    tool_name: str,
    description: str,
    annotations: Mapping[str, Any] | None,
    input_schema: Mapping[str, Any] | None = None,
) -> ToolTraits:
    hints = annotations or {}
    levels: list[CallPolicy | None] = (
        [server.tool_config.get(tool_name), server] if server is not None else []
    )
    words = f"{name_words(tool_name)}\n{description}"
    first_line = name_words(tool_name)
    properties = (input_schema or {}).get("properties")
    time_params = isinstance(properties, dict) and bool(_TIME_PARAMS & set(properties))
    moves = bool(_MOTION.search(words))
    read_only = hints.get("readOnlyHint") is True and hints.get("destructiveHint") is not True

    blocking = _configured(levels, "blocking")
    if blocking is None:
        # A read-only tool may still take long (a long scan); only motion needs a state change.
        blocking = (moves and not read_only) or time_params or bool(_LONG_RUNNING.search(words))

    cost = _configured(levels, "cost")
    if cost is None:
        if hints.get("destructiveHint") is True or (moves and not read_only):
            cost = "high"
        elif read_only:
            cost = "medium" if hints.get("openWorldHint") is True else "low"
        elif hints.get("readOnlyHint") is False or blocking:
            cost = "medium"
        else:
            cost = "low" if _READ_VERBS.search(first_line) else "medium"
    return ToolTraits(bool(blocking), cost)
