"""The command line that starts bootstrap.py under a Python interpreter."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from mcp_nexus.sandbox.models import ResourceLimits

SYSTEM_PYTHON = "/usr/bin/python3"


@cache
def bootstrap_source() -> str:
    """The text of bootstrap.py, passed with `-c` so nothing outside /usr must be visible."""
    return (Path(__file__).with_name("bootstrap.py")).read_text(encoding="utf-8")


def bootstrap_argv(
    python: str,
    *,
    data_dir: str,
    files: Sequence[str],
    limits: ResourceLimits,
    timeout_s: float,
    limit_processes: bool = True,
) -> list[str]:
    """`python -I -B -X utf8 -c <bootstrap> <config>`: isolated mode ignores PYTHON* variables
    and the user site; -B writes no bytecode; the user's code comes on stdin."""
    config = {
        "data_dir": data_dir,
        "files": list(files),
        "limits": {
            # The wall-clock timeout kills first; the CPU limit is the kernel's backstop.
            "cpu_seconds": math.ceil(timeout_s) + 1,
            "memory_bytes": limits.memory_bytes,
            "file_size_bytes": limits.file_size_bytes,
            "open_files": limits.open_files,
            "extra_processes": limits.extra_processes if limit_processes else None,
        },
    }
    return [python, "-I", "-B", "-X", "utf8", "-c", bootstrap_source(), json.dumps(config)]
