"""How a feature without a backend on this host is reported."""

from __future__ import annotations

from pydantic import BaseModel, Field


class MissingBackend(BaseModel):
    """A feature whose tools are not advertised, with why and what to install."""

    feature: str = Field(description="The feature that is unavailable, e.g. 'volume'.")
    reason: str = Field(description="What start-up detection found missing.")
    install: str = Field(description="What to install or change to enable it.")

    def sentence(self) -> str:
        return f"{self.reason}: {self.install}" if self.install else self.reason
