"""The tests' own port hand-out (support/ports.py): no two processes get one port, none from the kernel's pool."""

from __future__ import annotations

import socket
import subprocess
import sys

from support.ports import free_port, port_range
from support.processes import TESTS

PICKS_PER_PROCESS = 50


def test_processes_asking_at_once_never_get_the_same_port() -> None:
    program = (
        f"from support.ports import free_port\nprint(*(free_port() for _ in range({PICKS_PER_PROCESS})))"
    )
    children = [
        subprocess.Popen([sys.executable, "-c", program], cwd=TESTS, stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    ports = [int(port) for child in children for port in child.communicate(timeout=60)[0].split()]
    assert all(child.returncode == 0 for child in children)
    assert len(ports) == 4 * PICKS_PER_PROCESS
    assert len(set(ports)) == len(ports), sorted(p for p in ports if ports.count(p) > 1)


def test_ports_come_from_below_the_ephemeral_range() -> None:
    ports = port_range()
    assert ports is not None  # Linux with the usual ephemeral range: there is room below it
    with open("/proc/sys/net/ipv4/ip_local_port_range") as ephemeral:
        low = int(ephemeral.read().split()[0])
    assert ports.stop == low
    assert all(free_port() in ports for _ in range(10))


def test_a_port_in_use_is_skipped() -> None:
    ports = port_range()
    assert ports is not None
    first = free_port()
    following = ports[(first - ports.start + 1) % len(ports)]
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", following))  # the next in turn: now taken
        assert free_port() not in (first, following)
