"""The command line that starts bootstrap.py under a Python interpreter."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from mcp_nexus.sandbox.models import ResourceLimits

SYSTEM_PYTHON = "/usr/bin/python3"


CHANNEL_FD_INSIDE = 3
"""The descriptor number the tool channel has inside the sandbox, whatever it was outside."""


@cache
def bootstrap_source() -> str:
    """The text of bootstrap.py, passed with `-c` so nothing outside /usr must be visible."""
    return (Path(__file__).with_name("bootstrap.py")).read_text(encoding="utf-8")


@cache
def channel_client_source() -> str:
    """The text of channel_client.py: the sandbox's side of the tool channel, passed as an argument."""
    return (Path(__file__).with_name("channel_client.py")).read_text(encoding="utf-8")


def bootstrap_argv(
    python: str,
    *,
    data_dir: str,
    files: Sequence[str],
    limits: ResourceLimits,
    timeout_s: float,
    limit_processes: bool = True,
    channel_fd: int | None = None,
) -> list[str]:
    """`python -I -B -X utf8 -c <bootstrap> <config> [<channel client>]`: isolated mode ignores
    PYTHON* variables and the user site; -B writes no bytecode; the user's code comes on stdin.
    With `channel_fd` (the descriptor the process inherits) the code gets the tool channel."""
    config = {
        "data_dir": data_dir,
        "files": list(files),
        "channel_fd": channel_fd,
        "limits": {
            # The wall-clock timeout kills first; the CPU limit is the kernel's backstop.
            "cpu_seconds": math.ceil(timeout_s) + 1,
            "memory_bytes": limits.memory_bytes,
            "file_size_bytes": limits.file_size_bytes,
            "open_files": limits.open_files,
            "extra_processes": limits.extra_processes if limit_processes else None,
        },
    }
    argv = [python, "-I", "-B", "-X", "utf8", "-c", bootstrap_source(), json.dumps(config)]
    if channel_fd is not None:
        argv.append(channel_client_source())
    return argv
