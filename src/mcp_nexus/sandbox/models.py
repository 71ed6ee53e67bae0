"""Plain data passed into and out of the python_sandbox backends."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SandboxRequest:
    """One piece of untrusted Python to run, and the data-folder files it may read.

    `files` are bare file names inside the data folder (no slashes); the code sees them
    parsed as `data` (one file) or `files` (name -> parsed content), and under `/data`.

    `channel_fd`: a connected descriptor (one end of a socketpair, owned and closed by the
    caller) handed to the code as its only way out: the tool channel of code mode
    (pipeline/code_mode.py). Inside the sandbox it is always descriptor 3, and the code gets
    `call_tool`, `tools` and `find_tools` speaking JSON lines over it (channel_client.py).
    """

    code: str
    files: list[str] | None = None
    channel_fd: int | None = None


@dataclass(frozen=True)
class SandboxResult:
    """What one run produced. `stdout` is the answer; `sandboxed` is False only for the opt-in backend.

    `duration_s` is the run itself; `queued_s` the time it waited for a free slot before
    (0 when one was free at once).
    """

    stdout: str
    stderr: str
    exit_code: int
    timed_out: bool
    truncated: bool
    backend: str
    sandboxed: bool
    duration_s: float
    queued_s: float = 0.0

    @property
    def ok(self) -> bool:
        """True when the code ran to completion with exit code 0 and nothing was cut off."""
        return self.exit_code == 0 and not self.timed_out and not self.truncated


@dataclass(frozen=True)
class ProbeResult:
    """Whether a backend really works on this machine, and if not, why (with a fix when known)."""

    ok: bool
    reason: str


@dataclass(frozen=True)
class ResourceLimits:
    """Kernel limits applied to the untrusted process before its code runs.

    `extra_processes` is how many processes the code may create besides itself: 0 (the
    default) makes fork, subprocess and fork bombs fail with EAGAIN.
    """

    memory_bytes: int = 512 * 1024 * 1024
    tmp_bytes: int = 64 * 1024 * 1024
    file_size_bytes: int = 64 * 1024 * 1024
    open_files: int = 64
    extra_processes: int = 0

    def __post_init__(self) -> None:
        for name in ("memory_bytes", "tmp_bytes", "file_size_bytes", "open_files"):
            if getattr(self, name) <= 0:
                raise ValueError(f"ResourceLimits.{name} must be positive, got {getattr(self, name)}")
        if self.extra_processes < 0:
            raise ValueError(f"ResourceLimits.extra_processes must be >= 0, got {self.extra_processes}")
