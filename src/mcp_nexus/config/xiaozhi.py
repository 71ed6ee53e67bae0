"""Settings of the Xiaozhi bridge and the device envelope server (docs/XIAOZHI.md)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mcp_nexus.config.schema_base import ToolFilter


class XiaozhiSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    endpoints: list[str] = Field(
        default_factory=list, repr=False, description="wss://.../mcp/?token=... (secret)"
    )
    result_limit_bytes: int = Field(default=1024, ge=64)
    tools: ToolFilter = Field(default_factory=ToolFilter)
