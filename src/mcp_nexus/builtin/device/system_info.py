"""A snapshot of the host: OS, CPU, load, memory, disks, uptime, battery, versions."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
from pydantic import BaseModel, Field

from mcp_nexus import __version__ as nexus_version
from mcp_nexus.builtin.device.missing import MissingBackend

MAX_DISKS = 8
# Pseudo and image file systems are not "volumes" a person means by disk space.
_SKIPPED_FSTYPES = {"squashfs", "iso9660", "udf", "tmpfs", "devtmpfs", "overlay"}


class CpuInfo(BaseModel):
    model: str = Field(description="CPU model name, or the architecture when the model is unknown.")
    logical: int = Field(description="Logical CPUs (hardware threads).")
    physical: int | None = Field(description="Physical cores, when known.")


class MemoryInfo(BaseModel):
    total_bytes: int
    available_bytes: int
    used_percent: float


class DiskInfo(BaseModel):
    mountpoint: str
    device: str
    fstype: str
    total_bytes: int
    free_bytes: int
    used_percent: float


class BatteryInfo(BaseModel):
    percent: float
    plugged_in: bool | None
    seconds_left: int | None = Field(
        description="Estimated seconds of charge left; null when unknown or charging."
    )


class SystemInfo(BaseModel):
    """What get_system_info returns as structured content."""

    os: str = Field(description="Operating system name and version, e.g. 'Debian GNU/Linux 12 (bookworm)'.")
    kernel: str
    architecture: str
    hostname: str
    cpu: CpuInfo
    load_average: list[float] = Field(description="1, 5 and 15 minute load averages.")
    memory: MemoryInfo
    disks: list[DiskInfo]
    uptime_seconds: int
    python_version: str
    nexus_version: str
    battery: BatteryInfo | None = Field(description="Null when the host has no battery.")
    backends: dict[str, str | None] = Field(
        description="Feature to the backend serving it; null when missing."
    )
    missing: list[MissingBackend] = Field(
        description="Features without a backend here, with what to install."
    )


def _os_name() -> str:
    system = platform.system()
    if system == "Linux":
        try:
            release = platform.freedesktop_os_release()
        except OSError:
            return "Linux"
        return release.get("PRETTY_NAME") or release.get("NAME", "Linux")
    if system == "Darwin":
        return f"macOS {platform.mac_ver()[0]}".strip()
    if system == "Windows":
        return f"Windows {platform.release()} ({platform.version()})"
    return f"{system} {platform.release()}".strip()


def _cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            # x86 says "model name"; many ARM kernels only say "Hardware" or "Model".
            if key.strip() in ("model name", "Hardware", "Model", "cpu model") and value.strip():
                return value.strip()
    if sys.platform == "darwin":
        try:
            return subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"],
                capture_output=True,
                text=True,
                timeout=2,
                check=True,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine()


def _disks() -> list[DiskInfo]:
    partitions = [p for p in psutil.disk_partitions(all=False) if p.fstype not in _SKIPPED_FSTYPES]
    # "/" first even when it is an overlay (containers), then the rest by mount point.
    mountpoints = ["/", *sorted(p.mountpoint for p in partitions if p.mountpoint != "/")]
    by_mountpoint = {p.mountpoint: p for p in partitions}
    disks: list[DiskInfo] = []
    seen_devices: set[str] = set()
    for mountpoint in mountpoints:
        partition = by_mountpoint.get(mountpoint)
        device = partition.device if partition else "rootfs"
        if device in seen_devices and partition is not None:
            continue  # the same file system mounted twice (bind mounts)
        try:
            usage = psutil.disk_usage(mountpoint)
        except OSError:
            continue
        seen_devices.add(device)
        disks.append(
            DiskInfo(
                mountpoint=mountpoint,
                device=device,
                fstype=partition.fstype if partition else "",
                total_bytes=usage.total,
                free_bytes=usage.free,
                used_percent=usage.percent,
            )
        )
        if len(disks) >= MAX_DISKS:
            break
    return disks


def _battery() -> BatteryInfo | None:
    sensors_battery = getattr(psutil, "sensors_battery", None)
    battery = sensors_battery() if sensors_battery is not None else None
    if battery is None:
        return None
    seconds = battery.secsleft
    known = isinstance(seconds, int) and seconds >= 0  # psutil uses negative sentinels for unknown/unlimited
    return BatteryInfo(
        percent=round(battery.percent, 1),
        plugged_in=battery.power_plugged,
        seconds_left=int(seconds) if known else None,
    )


def collect_system_info(backends: dict[str, str | None], missing: list[MissingBackend]) -> SystemInfo:
    """Gather the snapshot (blocking: a few file reads and syscalls; call it from a thread)."""
    memory = psutil.virtual_memory()
    return SystemInfo(
        os=_os_name(),
        kernel=platform.release(),
        architecture=platform.machine(),
        hostname=socket.gethostname(),
        cpu=CpuInfo(
            model=_cpu_model(),
            logical=psutil.cpu_count(logical=True) or os.cpu_count() or 1,
            physical=psutil.cpu_count(logical=False),
        ),
        load_average=[round(value, 2) for value in psutil.getloadavg()],
        memory=MemoryInfo(
            total_bytes=memory.total, available_bytes=memory.available, used_percent=round(memory.percent, 1)
        ),
        disks=_disks(),
        uptime_seconds=max(0, int(time.time() - psutil.boot_time())),
        python_version=platform.python_version(),
        nexus_version=nexus_version,
        battery=_battery(),
        backends=backends,
        missing=missing,
    )


def _gib(size: int) -> str:
    return f"{size / 2**30:.1f} GiB"


def _duration(seconds: int) -> str:
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min"


def describe_system_info(info: SystemInfo) -> str:
    """A few short sentences for clients that only read the text content."""
    used = info.memory.total_bytes - info.memory.available_bytes
    parts = [
        f"{info.hostname} runs {info.os}, kernel {info.kernel} ({info.architecture}).",
        f"CPU: {info.cpu.model}, {info.cpu.logical} threads, load {info.load_average[0]:.2f}.",
        f"Memory: {_gib(used)} of {_gib(info.memory.total_bytes)} used ({info.memory.used_percent:.0f}%).",
    ]
    if info.disks:
        disks = ", ".join(
            f"{d.mountpoint} {d.used_percent:.0f}% of {_gib(d.total_bytes)}" for d in info.disks
        )
        parts.append(f"Disks: {disks}.")
    parts.append(
        f"Up {_duration(info.uptime_seconds)}; Python {info.python_version}, Nexus {info.nexus_version}."
    )
    if info.battery is not None:
        state = "charging" if info.battery.plugged_in else "on battery"
        parts.append(f"Battery {info.battery.percent:.0f}% ({state}).")
    for missing in info.missing:
        parts.append(f"No {missing.feature} control: {missing.sentence()}.")
    return " ".join(parts)
