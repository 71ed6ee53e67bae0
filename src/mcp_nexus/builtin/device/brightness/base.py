"""What every brightness backend offers and what it answers."""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, Field


class BrightnessReading(BaseModel):
    """The screen brightness as the tools report it."""

    level: int = Field(ge=0, le=100, description="Brightness in percent of the device's maximum.")
    device: str = Field(description="The backlight device, e.g. intel_backlight.")
    backend: str = Field(description="Which backend answered: sysfs, brightnessctl or macos.")
    raw: int | None = Field(default=None, description="The device's own brightness value, when it has one.")
    max_raw: int | None = Field(default=None, description="The device's maximum raw value, when it has one.")


def percent_of(raw: int, max_raw: int) -> int:
    """Raw device value to percent, clamped so a driver that overshoots still reads 0-100."""
    return max(0, min(100, round(raw * 100 / max_raw)))


def raw_for(level: int, max_raw: int) -> int:
    """Percent to the nearest raw device value."""
    return round(level * max_raw / 100)


class BrightnessBackend(Protocol):
    """A backlight the brightness tools talk to."""

    name: str
    """Short id reported to clients, e.g. 'sysfs'."""

    def probe(self) -> str | None:
        """Check at start-up (blocking) that a device answers; None when usable, else why not."""
        ...

    async def read(self) -> BrightnessReading:
        """The current brightness; raises BackendError naming what is missing."""
        ...

    async def write(self, level: int) -> BrightnessReading:
        """Set the brightness to `level` percent and return what the device reports afterwards."""
        ...
