"""Router decision cache (the design's "Router 决策缓存"): the same question about the same tools gets the same answer.

Keyed by the goal, the step, what the router saw of the history and environment, and the
tool set's version: when a server adds or changes a tool, every cached decision is
stale by construction. Only usable tool decisions are kept (a failed answer is asked again).
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from typing import Any

from mcp_nexus.control.decision import RouterContext, RouterDecision

DEFAULT_MAX_ENTRIES = 512


def decision_key(context: RouterContext, tools_version: str) -> str:
    material = json.dumps(
        {
            "goal": context.goal,
            "step": context.current_step,
            "history": context.history,
            "environment": context.environment,
            "tools": tools_version,
        },
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(material.encode()).hexdigest()


class DecisionCache:
    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> RouterDecision | None:
        stored = self._entries.get(key)
        if stored is None:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return RouterDecision.from_json(stored)  # a copy: callers may change their decision

    def put(self, key: str, decision: RouterDecision) -> None:
        if not decision.usable or decision.tool is None:
            return
        self._entries[key] = decision.to_json()
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
