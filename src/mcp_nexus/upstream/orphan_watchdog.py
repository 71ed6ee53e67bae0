"""The orphan watchdog: ends the stdio servers' process groups when their gateway is gone.

The gateway starts one watchdog (see `child_process.py`) as
`python -I -S orphan_watchdog.py <gateway pid>`, in a session of its own, with a pipe on
its stdin. For every stdio server it starts, the gateway writes
`+<pgid> <stdin grace> <term grace>`; once that group is gone, `-<pgid>`. Only the gateway
holds the write end, so end-of-file means the gateway is gone, however it went: SIGKILL,
the OOM killer, a crash, a signal that came before its handlers were in place. The
watchdog then stops every group still registered the way the gateway would have (the
servers' stdin is already at end-of-file: wait the stdin grace, SIGTERM and SIGCONT the
group, wait the term grace, SIGKILL it), prints one line on the gateway's stderr when it
had to, and exits. It also notices when its parent changed (the gateway died but a forked
copy of it still holds the pipe).

Why a separate process: the kernel's parent-death signal (Linux only) reaches a server's
direct process, not what a launcher such as `npx`, `uvx` or `sh -c` forked; those stay in
the server's process group, and only someone alive can signal that group.

Standard library only and no package imports: it starts in about 15 ms and holds a few MB.
The group helpers at the top are shared with `child_process.py`.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from collections.abc import Iterator, Mapping

NOTICE = "nexus orphan watchdog"
"""Starts the line printed when the gateway left process groups running (tests look for it)."""

POLL_S = 0.05
PARENT_CHECK_S = 1.0


def signal_group(pgid: int, sig: int) -> bool:
    """Send `sig` to process group `pgid`; False when the group does not exist (any more)."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # members exist, but none we may signal
    return True


def group_alive(pgid: int) -> bool:
    """Whether group `pgid` still has a member that is not a zombie.

    A zombie is dead already and only waits for its parent to collect it (some container
    init processes never do), so it must not keep a stop waiting for the whole grace.
    """
    if not signal_group(pgid, 0):
        return False
    if not sys.platform.startswith("linux"):
        return True  # elsewhere zombies count too: init (launchd) collects them promptly
    return any(True for _ in _live_members(pgid))


def _live_members(pgid: int) -> Iterator[int]:
    with os.scandir("/proc") as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as stat_file:
                    stat = stat_file.read()
            except OSError:
                continue  # gone meanwhile
            # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
            fields = stat[stat.rfind(b")") + 2 :].split()
            if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
                yield int(entry.name)


def end_groups(graces: Mapping[int, tuple[float, float]]) -> list[int]:
    """Stop each group: wait its stdin grace, SIGTERM+SIGCONT, wait its term grace, SIGKILL.

    `graces` maps a pgid to (stdin grace, term grace) in seconds; the caller has closed the
    groups' stdin (or it is at end-of-file already). Blocks until every group is gone or
    was sent SIGKILL; returns the groups that were still alive at the start.
    """
    start = time.monotonic()
    alive = {pgid for pgid in graces if group_alive(pgid)}
    found = sorted(alive)
    terminated: set[int] = set()
    while alive:
        elapsed = time.monotonic() - start
        for pgid in sorted(alive):
            stdin_grace, term_grace = graces[pgid]
            if not group_alive(pgid):
                alive.discard(pgid)
            elif pgid not in terminated and elapsed >= stdin_grace:
                signal_group(pgid, signal.SIGTERM)
                signal_group(pgid, signal.SIGCONT)  # a stopped process acts on SIGTERM only once continued
                terminated.add(pgid)
            elif pgid in terminated and elapsed >= stdin_grace + term_grace:
                signal_group(pgid, signal.SIGKILL)
                alive.discard(pgid)
        if alive:
            time.sleep(POLL_S)
    return found


def _apply(line: bytes, groups: dict[int, tuple[float, float]]) -> None:
    try:
        if line.startswith(b"+"):
            pgid, stdin_grace, term_grace = line[1:].split()
            groups[int(pgid)] = (float(stdin_grace), float(term_grace))
        elif line.startswith(b"-"):
            groups.pop(int(line[1:]), None)
    except ValueError:
        _say(f"{NOTICE}: ignored a malformed line {line[:80]!r}")


def _say(text: str) -> None:
    try:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass  # the gateway's stderr may be gone with it; the groups were ended anyway


def watch(gateway_pid: int) -> int:
    """Read registrations until the gateway is gone, then end what it left behind."""
    # Ctrl-C belongs to the gateway (this session has no terminal; this is for `kill -INT`).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.chdir("/")  # hold no directory busy
    groups: dict[int, tuple[float, float]] = {}
    pending = b""
    while True:
        readable, _, _ = select.select([0], [], [], PARENT_CHECK_S)
        if not readable:
            if os.getppid() != gateway_pid:
                break
            continue
        chunk = os.read(0, 65536)
        if not chunk:
            break
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            _apply(line.strip(), groups)
    if groups:
        ended = end_groups(groups)
        if ended:
            listed = ", ".join(str(pgid) for pgid in ended)
            _say(
                f"{NOTICE}: gateway pid {gateway_pid} is gone and left {len(ended)} server process "
                f"group(s) running ({listed}); ended them"
            )
    return 0


if __name__ == "__main__":
    sys.exit(watch(int(sys.argv[1])))
