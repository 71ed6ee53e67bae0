"""Ports for the servers tests start, never one another process can be handed meanwhile.

The usual recipe (bind a probe to port 0, read its port, close it, pass the number on) leaves a
window: until the test's server binds that port, the kernel may hand it to anyone else who binds
port 0 (another test's server, another probe). Then the server that lost the race exits, and
whoever polls that port talks to the winner: with two test workers, two of the official suite's
OAuth scenarios failed together that way (their drivers start 14 gateways at once, each on a
probed port, beside 14 harness servers on port 0).

So ports come from below the kernel's ephemeral range (`ip_local_port_range`), where bind(0) and
connect() never pick, in turn from one counter that every process of every test run on this
machine shares (a file in the temp folder, updated under `flock`). A port comes round again only
after every other port of the range has been handed out; one in use at that moment is skipped.
"""

from __future__ import annotations

import fcntl
import os
import random
import socket
import tempfile
from pathlib import Path

RANGE_SIZE = 10_000  # ports handed out before the first comes round again
LOWEST = 10_000  # never below: the registered services' ports
EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")
COUNTER = Path(tempfile.gettempdir()) / f"nexus-test-ports-{os.getuid()}"


def port_range() -> range | None:
    """The ports below the ephemeral range to hand out, or None where there is no room for them."""
    try:
        ephemeral_low = int(EPHEMERAL.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    low = max(LOWEST, ephemeral_low - RANGE_SIZE)
    return range(low, ephemeral_low) if ephemeral_low - low >= 1_000 else None


def is_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _kernel_pick() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def free_port() -> int:
    """A free loopback port that no other process of the tests is handed before it comes round again."""
    ports = port_range()
    if ports is None:
        return _kernel_pick()
    fd = os.open(COUNTER, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # released when fd closes
        text = os.read(fd, 32).decode(errors="replace").strip()
        last = int(text) if text.isdigit() else random.choice(ports)
        for step in range(1, len(ports) + 1):
            port = ports[(last - ports.start + step) % len(ports)]
            if is_free(port):
                os.lseek(fd, 0, os.SEEK_SET)
                os.ftruncate(fd, 0)
                os.write(fd, str(port).encode())
                return port
    finally:
        os.close(fd)
    return _kernel_pick()
