"""Small shared pieces of the config model."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ToolFilter(Strict):
    """Which of a server's tools are exposed: `allow` (None = all) minus `deny`; fnmatch patterns."""

    allow: list[str] | None = None
    deny: list[str] = Field(default_factory=list)
