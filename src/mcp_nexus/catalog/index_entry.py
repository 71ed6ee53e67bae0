"""One tool in the tool index: the controller design's `ToolIndexEntry`, plus annotations and the exposed name."""

from __future__ import annotations

import hashlib
import json
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mcp_nexus.catalog.tool_names import name_problem, printable

CostEstimate = Literal["low", "medium", "high"]

DESIGN_FIELDS = (
    "tool_name",
    "description",
    "input_schema",
    "tags",
    "blocking",
    "cost_estimate",
    "last_updated",
)
"""A tool's keys in the design's cache file (its `server_id` is the enclosing server's)."""


class IndexEntry(BaseModel):
    """What the router, `find_tools` and operators know about one tool of one server.

    `name` is what the gateway exposes (`<namespace><separator><tool_name>`, or the bare name);
    `tool_name` is the server's own name for it. `annotations` keeps the server's hints
    (readOnlyHint, destructiveHint, idempotentHint, openWorldHint) as the server spelled them.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    server_id: str = Field(min_length=1)
    tool_name: str = Field(min_length=1)
    name: str = Field(min_length=1)
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    blocking: bool = False
    cost_estimate: CostEstimate = "low"
    last_updated: str = ""  # ISO 8601, UTC
    annotations: dict[str, Any] = Field(default_factory=dict)

    @field_validator("tool_name")
    @classmethod
    def _check_tool_name(cls, value: str) -> str:
        problem = name_problem(value)
        if problem is not None:
            raise ValueError(f"{problem}: {printable(value)!r}")
        return value

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        # the exposed name: a namespace may take it past 128 characters, nothing else may be wrong with it
        problem = name_problem(value[:128])
        if problem is not None:
            raise ValueError(f"{problem}: {printable(value)!r}")
        return value

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, every field (the admin API and `nexus index show`)."""
        return self.model_dump(mode="json")

    @cached_property
    def digest(self) -> str:
        """A hash of everything but the timestamp: equal digests describe the same tool.

        Cached on the (frozen) entry: an unchanged tool keeps its entry across syncs, so the
        index version over ten thousand tools costs one hash each, once.
        """
        content = (
            self.server_id,
            self.tool_name,
            self.name,
            self.description,
            _canonical(self.input_schema),
            self.tags,
            self.blocking,
            self.cost_estimate,
            _canonical(self.annotations),
        )
        return hashlib.sha256(json.dumps(content, ensure_ascii=False).encode()).hexdigest()


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
