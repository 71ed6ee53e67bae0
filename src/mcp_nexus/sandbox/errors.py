"""Errors raised by the sandbox library; the gateway turns them into tool errors."""

from __future__ import annotations

from collections.abc import Mapping


class SandboxError(Exception):
    """Base class for every sandbox failure that is not the user's code failing."""


class SandboxInputError(SandboxError, ValueError):
    """The request itself is bad (empty code, a file name with a slash, a missing file...)."""


class SandboxUnavailableError(SandboxError):
    """No backend can run code on this machine; `reasons` maps each backend name to why."""

    def __init__(self, reasons: Mapping[str, str]) -> None:
        self.reasons = dict(reasons)
        detail = "; ".join(f"{name}: {why}" for name, why in self.reasons.items()) or "no backend configured"
        super().__init__(f"python_sandbox is unavailable on this machine ({detail})")
