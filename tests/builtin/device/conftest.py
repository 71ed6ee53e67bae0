"""A real PulseAudio server with a null sink, and sysfs-shaped backlight folders, for the device tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest

from support.polling import eventually_sync

PULSE_START_TIMEOUT_SECONDS = 15.0
NULL_SINK = "nexus_test_sink"


@dataclass(frozen=True)
class PulseServer:
    """A private PulseAudio daemon; `address` goes into PULSE_SERVER or `pulse_server=`."""

    address: str
    process: subprocess.Popen[bytes]

    def env(self) -> dict[str, str]:
        return {**os.environ, "PULSE_SERVER": self.address}

    def pactl(self, *args: str) -> str:
        """Ask the server directly, independently of the code under test."""
        completed = subprocess.run(
            ["pactl", *args], env=self.env(), capture_output=True, text=True, timeout=10, check=True
        )
        return completed.stdout

    def sink_percent(self) -> int:
        """The null sink's volume of its first channel, read straight from PulseAudio."""
        line = next(line for line in self.pactl("get-sink-volume", NULL_SINK).splitlines() if "%" in line)
        return int(line.split("/")[1].strip().rstrip("%"))


def _start_pulseaudio(folder: Path) -> PulseServer:
    for program in ("pulseaudio", "pactl"):
        if shutil.which(program) is None:
            pytest.fail(f"{program} is not installed: apt-get install pulseaudio pulseaudio-utils alsa-utils")
    runtime = folder / "runtime"
    runtime.mkdir()
    socket_path = runtime / "native"
    script = folder / "default.pa"
    # Only a null sink and a socket nobody else uses: no hardware, no D-Bus, no cookie.
    script.write_text(
        f"load-module module-null-sink sink_name={NULL_SINK}\n"
        f"load-module module-native-protocol-unix auth-anonymous=1 socket={socket_path}\n"
        f"set-default-sink {NULL_SINK}\n"
    )
    env = {
        **os.environ,
        "HOME": str(folder),
        "XDG_RUNTIME_DIR": str(runtime),
        "PULSE_RUNTIME_PATH": str(runtime),
        "XDG_CONFIG_HOME": str(folder / "config"),
    }
    env.pop("PULSE_SERVER", None)
    process = subprocess.Popen(
        [
            "pulseaudio",
            "--daemonize=no",
            "--exit-idle-time=-1",
            "--use-pid-file=no",
            "--disallow-module-loading",
            "--log-target=stderr",
            "--log-level=error",
            "-n",
            "-F",
            str(script),
        ],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    server = PulseServer(address=f"unix:{socket_path}", process=process)

    def answering() -> bool:
        if process.poll() is not None:
            stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
            pytest.fail(f"pulseaudio exited with {process.returncode}: {stderr.strip()}")
        probe = subprocess.run(
            ["pactl", "info"], env=server.env(), capture_output=True, timeout=5, check=False
        )
        return probe.returncode == 0

    try:
        eventually_sync(
            answering, PULSE_START_TIMEOUT_SECONDS, f"pulseaudio to answer on {socket_path}", interval=0.1
        )
    except BaseException:
        _stop(process)
        raise
    return server


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
    if process.stderr:
        process.stderr.close()


@pytest.fixture(scope="module")
def pulse() -> Iterator[PulseServer]:
    """One PulseAudio daemon shared by a module's tests; killed at the end."""
    with tempfile.TemporaryDirectory(prefix="nexus-pulse-") as folder:
        server = _start_pulseaudio(Path(folder))
        try:
            yield server
        finally:
            _stop(server.process)


@pytest.fixture
def private_pulse(tmp_path: Path) -> Iterator[PulseServer]:
    """A daemon of the test's own, for tests that kill it."""
    server = _start_pulseaudio(tmp_path)
    try:
        yield server
    finally:
        _stop(server.process)


class BacklightMaker(Protocol):
    def __call__(self, name: str, *, brightness: int, max_brightness: int, kind: str = "raw") -> Path: ...


@pytest.fixture
def backlight_root(tmp_path: Path) -> Path:
    """An empty folder standing in for /sys/class/backlight."""
    root = tmp_path / "backlight"
    root.mkdir()
    return root


@pytest.fixture
def make_backlight(backlight_root: Path) -> BacklightMaker:
    """Create `<root>/<name>/{brightness,max_brightness,type}` like the kernel's backlight class."""

    def make(name: str, *, brightness: int, max_brightness: int, kind: str = "raw") -> Path:
        device = backlight_root / name
        device.mkdir()
        (device / "brightness").write_text(f"{brightness}\n")
        (device / "max_brightness").write_text(f"{max_brightness}\n")
        (device / "type").write_text(f"{kind}\n")
        return device

    return make
