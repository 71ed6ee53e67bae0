"""What every volume backend offers and what it answers."""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, Field


class VolumeReading(BaseModel):
    """The output volume as the tools report it."""

    level: int = Field(ge=0, description="Output volume in percent (PulseAudio can report above 100).")
    muted: bool | None = Field(description="Whether the output is muted; null when the mixer has no switch.")
    backend: str = Field(description="Which mixer answered: pactl, amixer or osascript.")


class VolumeBackend(Protocol):
    """A mixer the volume tools talk to."""

    name: str
    """Short id reported to clients, e.g. 'pactl'."""

    def probe(self) -> str | None:
        """Check at start-up (blocking) that the mixer answers; None when usable, else why not."""
        ...

    async def read(self) -> VolumeReading:
        """The current output volume; raises BackendError naming what is missing."""
        ...

    async def write(self, level: int) -> VolumeReading:
        """Set the output volume to `level` percent and return what the mixer reports afterwards."""
        ...
