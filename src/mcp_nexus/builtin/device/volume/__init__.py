"""Output volume backends: pactl (PulseAudio/PipeWire), amixer (ALSA), osascript (macOS)."""

from mcp_nexus.builtin.device.volume.base import VolumeBackend, VolumeReading
from mcp_nexus.builtin.device.volume.detect import AUDIO_BACKEND_CHOICES, detect_volume_backend

__all__ = ["AUDIO_BACKEND_CHOICES", "VolumeBackend", "VolumeReading", "detect_volume_backend"]
