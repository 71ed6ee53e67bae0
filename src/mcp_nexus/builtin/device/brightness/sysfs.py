"""The Linux backlight class: `<root>/<device>/brightness` and `max_brightness`."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from mcp_nexus.builtin.device.brightness.base import BrightnessReading, percent_of, raw_for
from mcp_nexus.builtin.device.errors import BackendError

DEFAULT_BACKLIGHT_ROOT = "/sys/class/backlight"
# The kernel's own advice (Documentation/ABI/stable/sysfs-class-backlight): firmware
# interfaces know the panel best, raw registers least; systemd picks in the same order.
_TYPE_PREFERENCE = {"firmware": 0, "platform": 1, "raw": 2}


def list_backlight_devices(root: Path) -> list[str]:
    """Device names under `root` that have a max_brightness, best first."""
    try:
        entries = list(root.iterdir())
    except OSError:
        return []
    devices = [entry for entry in entries if (entry / "max_brightness").is_file()]

    def preference(device: Path) -> tuple[int, str]:
        try:
            kind = (device / "type").read_text().strip()
        except OSError:
            kind = ""
        return _TYPE_PREFERENCE.get(kind, len(_TYPE_PREFERENCE)), device.name

    return [device.name for device in sorted(devices, key=preference)]


def _read_int(path: Path) -> int:
    try:
        text = path.read_text().strip()
    except FileNotFoundError as exc:
        raise BackendError(f"backlight device is gone: {path} does not exist") from exc
    except PermissionError as exc:
        raise BackendError(f"no permission to read {path}") from exc
    except OSError as exc:
        raise BackendError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        return int(text)
    except ValueError as exc:
        raise BackendError(f"{path} does not hold an integer: {text[:40]!r}") from exc


class SysfsBacklight:
    """One backlight device in sysfs (or a folder shaped like it)."""

    name = "sysfs"

    def __init__(self, *, root: str = DEFAULT_BACKLIGHT_ROOT, device: str | None = None) -> None:
        self._root = Path(root)
        self._wanted = device
        self.device: str | None = device

    def probe(self) -> str | None:
        devices = list_backlight_devices(self._root)
        if self._wanted is not None:
            if self._wanted not in devices:
                return f"backlight device {self._wanted!r} not found under {self._root}"
            self.device = self._wanted
        elif devices:
            self.device = devices[0]
        else:
            return f"no backlight device under {self._root}"
        try:
            max_raw = _read_int(self._root / self.device / "max_brightness")
        except BackendError as exc:
            return str(exc)
        if max_raw <= 0:
            return f"{self._root / self.device / 'max_brightness'} is {max_raw}, not a usable maximum"
        return None

    def writable(self) -> bool:
        """Whether this process may write the brightness file (root may, users need a udev rule)."""
        return self.device is not None and os.access(self._root / self.device / "brightness", os.W_OK)

    def _device_dir(self) -> Path:
        if self.device is None:
            raise BackendError(f"no backlight device under {self._root}")
        return self._root / self.device

    async def read(self) -> BrightnessReading:
        # sysfs attributes answer from memory in microseconds: no thread hop needed.
        folder = self._device_dir()
        max_raw = _read_int(folder / "max_brightness")
        raw = _read_int(folder / "brightness")
        if max_raw <= 0:
            raise BackendError(f"{folder / 'max_brightness'} is {max_raw}, not a usable maximum")
        return BrightnessReading(
            level=percent_of(raw, max_raw), device=folder.name, backend=self.name, raw=raw, max_raw=max_raw
        )

    async def write(self, level: int) -> BrightnessReading:
        folder = self._device_dir()
        max_raw = _read_int(folder / "max_brightness")
        target = folder / "brightness"
        try:
            # No O_CREAT: a vanished device must fail, not leave a stray file behind.
            descriptor = os.open(target, os.O_WRONLY | os.O_TRUNC)
        except FileNotFoundError as exc:
            raise BackendError(f"backlight device is gone: {target} does not exist") from exc
        except PermissionError as exc:
            raise BackendError(
                f"no permission to write {target}: run as root, grant the 'video' group write access "
                "with a udev rule, or install brightnessctl"
            ) from exc
        try:
            os.write(descriptor, f"{raw_for(level, max_raw)}\n".encode())
        except OSError as exc:
            reason = "the driver rejected the value" if exc.errno == errno.EINVAL else exc.strerror
            raise BackendError(f"cannot write {target}: {reason}") from exc
        finally:
            os.close(descriptor)
        return await self.read()
