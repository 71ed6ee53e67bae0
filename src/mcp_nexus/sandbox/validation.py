"""Checks on a SandboxRequest before any process starts."""

from __future__ import annotations

import stat
from pathlib import Path

from mcp_nexus.sandbox.errors import SandboxInputError
from mcp_nexus.sandbox.models import SandboxRequest

MAX_CODE_BYTES = 256 * 1024
MAX_FILES = 32


def validate_file_name(name: object, data_dir: Path) -> str:
    """A bare name of a regular file directly inside `data_dir` (no paths, links or hidden files)."""
    if not isinstance(name, str) or not name:
        raise SandboxInputError(f"file names must be non-empty strings, got {name!r}")
    if "/" in name or "\\" in name or "\x00" in name:
        raise SandboxInputError(f"file {name!r} must be a bare file name from the data folder, not a path")
    if name in (".", "..") or name.startswith("."):
        raise SandboxInputError(f"file {name!r} is not allowed (hidden or special name)")
    try:
        mode = (data_dir / name).lstat().st_mode
    except FileNotFoundError:
        raise SandboxInputError(f"file {name!r} does not exist in the data folder") from None
    except OSError as error:
        raise SandboxInputError(f"file {name!r} cannot be read: {error.strerror}") from None
    if not stat.S_ISREG(mode):
        raise SandboxInputError(f"file {name!r} is not a regular file (links and folders are refused)")
    return name


def validate_request(request: SandboxRequest, data_dir: Path) -> SandboxRequest:
    """Return the request with its file list checked and de-duplicated, or raise SandboxInputError."""
    if not isinstance(request.code, str) or not request.code.strip():
        raise SandboxInputError("code is empty: pass Python source that prints its answer")
    if len(request.code.encode("utf-8", "replace")) > MAX_CODE_BYTES:
        raise SandboxInputError(f"code is larger than {MAX_CODE_BYTES} bytes")
    files = request.files or []
    if not isinstance(files, list | tuple):
        raise SandboxInputError(f"files must be a list of file names, got {type(files).__name__}")
    if len(files) > MAX_FILES:
        raise SandboxInputError(f"at most {MAX_FILES} files per call, got {len(files)}")
    names = list(dict.fromkeys(validate_file_name(name, data_dir) for name in files))
    channel = request.channel_fd
    if channel is not None and (isinstance(channel, bool) or not isinstance(channel, int) or channel < 3):
        raise SandboxInputError(f"channel_fd must be an open descriptor number above 2, got {channel!r}")
    return SandboxRequest(code=request.code, files=names, channel_fd=channel)
