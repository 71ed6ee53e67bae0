"""Pick the brightness backend at start-up, or say why there is none."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal, get_args

from mcp_nexus.builtin.device.brightness.base import BrightnessBackend
from mcp_nexus.builtin.device.brightness.brightnessctl import BrightnessctlBacklight
from mcp_nexus.builtin.device.brightness.macos import MacosBacklight
from mcp_nexus.builtin.device.brightness.sysfs import DEFAULT_BACKLIGHT_ROOT, SysfsBacklight
from mcp_nexus.builtin.device.commands import DEFAULT_TIMEOUT_SECONDS
from mcp_nexus.builtin.device.missing import MissingBackend

BrightnessBackendChoice = Literal["auto", "sysfs", "brightnessctl", "macos", "none"]
BRIGHTNESS_BACKEND_CHOICES: tuple[str, ...] = get_args(BrightnessBackendChoice)

_INSTALL_HINT = {
    "sysfs": "needs a display with a kernel backlight driver (laptop panels; desktop monitors rarely have one)",
    "brightnessctl": "install brightnessctl",
    "macos": "install the brightness tool (brew install brightness)",
}


def detect_brightness_backend(
    choice: str = "auto",
    *,
    backlight_root: str = DEFAULT_BACKLIGHT_ROOT,
    backlight_device: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> BrightnessBackend | MissingBackend:
    """The first backend whose probe passes, in the order of `choice` ('auto': the platform's usual order)."""
    if choice not in BRIGHTNESS_BACKEND_CHOICES:
        raise ValueError(
            f"brightness_backend must be one of {', '.join(BRIGHTNESS_BACKEND_CHOICES)}; got {choice!r}"
        )
    if choice == "none":
        return MissingBackend(
            feature="brightness", reason="brightness control disabled by configuration", install=""
        )
    sysfs = SysfsBacklight(root=backlight_root, device=backlight_device)
    brightnessctl = BrightnessctlBacklight(device=backlight_device, timeout=timeout)
    candidates: dict[str, BrightnessBackend] = {
        "sysfs": sysfs,
        "brightnessctl": brightnessctl,
        "macos": MacosBacklight(timeout=timeout),
    }
    # brightnessctl only ever drives the real /sys/class/backlight, so it is no
    # substitute for a custom root (a test folder, a chroot).
    real_root = Path(backlight_root).resolve() == Path(DEFAULT_BACKLIGHT_ROOT).resolve()
    if choice == "auto":
        order = (
            ["macos"] if sys.platform == "darwin" else ["sysfs", *(["brightnessctl"] if real_root else [])]
        )
    else:
        order = [choice]
    failures: list[str] = []
    for name in order:
        backend = candidates[name]
        problem = backend.probe()
        if problem is None:
            # An unprivileged user usually can read but not write sysfs; brightnessctl
            # writes through logind instead, so prefer it when it works.
            prefer_brightnessctl = (
                backend is sysfs and choice == "auto" and real_root and not sysfs.writable()
            )
            if prefer_brightnessctl and brightnessctl.probe() is None:
                return brightnessctl
            return backend
        failures.append(problem)
    return MissingBackend(
        feature="brightness",
        reason="no backlight found (" + "; ".join(failures) + ")",
        install="; or ".join(_INSTALL_HINT[name] for name in order),
    )
