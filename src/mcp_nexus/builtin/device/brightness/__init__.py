"""Screen brightness backends: sysfs backlight class, brightnessctl, macOS."""

from mcp_nexus.builtin.device.brightness.base import BrightnessBackend, BrightnessReading
from mcp_nexus.builtin.device.brightness.detect import BRIGHTNESS_BACKEND_CHOICES, detect_brightness_backend

__all__ = [
    "BRIGHTNESS_BACKEND_CHOICES",
    "BrightnessBackend",
    "BrightnessReading",
    "detect_brightness_backend",
]
