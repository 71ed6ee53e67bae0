"""Descriptors the gateway inherited stay the gateway's: close-on-exec before any child starts.

The gateway runs on uvloop, whose spawn (libuv) has no `close_fds`: every inheritable
descriptor stays open in the child. Nexus creates none (Python's own are close-on-exec,
PEP 446), but whoever started the gateway may have left some open without close-on-exec: a
shell's `3>file`, a desktop client's leaked pipe, a supervisor's socket. Each would reach
every stdio server, sandboxed command and device command the gateway starts: a server could
read or write the parent's file, and a pipe held open this way never reaches end-of-file for
its owner.

`seal()` marks every inherited descriptor from 3 up close-on-exec, once per process, before
the first child is spawned. Nothing is closed: the gateway may still use what it inherited.
A child that needs a descriptor gets it explicitly (`pass_fds`), which works on close-on-exec
descriptors.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable

logger = logging.getLogger(__name__)

_FIRST = 3  # stdin, stdout and stderr are the child's by design
_FALLBACK_LIMIT = 65536  # without a descriptor listing, how far up to look at most
_sealed_in: int | None = None  # the pid that sealed: a forked copy's own descriptors are its own


def seal() -> list[int]:
    """Make every inheritable descriptor >= 3 close-on-exec (once per process); returns those changed."""
    global _sealed_in
    pid = os.getpid()
    if _sealed_in == pid:
        return []
    _sealed_in = pid
    changed = []
    for fd in _open_descriptors():
        if fd < _FIRST:
            continue
        try:
            if os.get_inheritable(fd):
                os.set_inheritable(fd, False)
                changed.append(fd)
        except OSError:  # closed meanwhile (the listing's own descriptor is one)
            continue
    if changed:
        logger.info(
            "inherited descriptor(s) %s made close-on-exec: no server started here gets them", changed
        )
    return changed


def _open_descriptors() -> Iterable[int]:
    """The open descriptors (Linux: /proc/self/fd; macOS: /dev/fd), else every possible one."""
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            return sorted(int(name) for name in os.listdir(folder) if name.isdigit())
        except OSError:
            continue
    limit = os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else _FALLBACK_LIMIT
    return range(_FIRST, min(limit if limit > 0 else _FALLBACK_LIMIT, _FALLBACK_LIMIT))
