"""The sandbox data folder: where large results are written, and how long they stay.

Files are `tool_output_<uuid>.json`, written to a hidden temp name and renamed into place,
so python_sandbox never sees half a file (it refuses hidden names anyway). Retention runs
after each write: files older than `max_age` go, then the oldest until the total fits.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

from mcp_nexus.paths import data_subdir

logger = logging.getLogger(__name__)

FILE_PREFIX = "tool_output_"
FILE_SUFFIX = ".json"
_CHUNK_CHARS = 1 << 20  # encode and write 1 MiB at a time: no second full copy of a big payload


def default_offload_dir() -> Path:
    return data_subdir("offload")


class OffloadFolder:
    def __init__(self, path: Path, *, max_age: float, max_bytes: int) -> None:
        self.path = path
        self.max_age = max_age
        self.max_bytes = max_bytes

    def ensure(self) -> Path:
        """Create the folder 0700 (offloaded results may hold private data), or make an existing
        one private: access for group or others is removed with a warning.

        Raises PermissionError (with the reason) for a folder that cannot be made private
        without harming someone else: one owned by another user, or a shared sticky folder
        such as /tmp. Other users could read the results there, or plant files that
        python_sandbox would then read as the gateway's own.
        """
        if not self.path.is_dir():
            self.path.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(self.path, 0o700)  # mkdir's mode is filtered by the umask
            return self.path
        info = self.path.stat()
        if not info.st_mode & 0o077:
            return self.path
        mode = stat.S_IMODE(info.st_mode)
        if info.st_uid != os.geteuid() or info.st_mode & stat.S_ISVTX:
            whose = "a shared sticky folder" if info.st_mode & stat.S_ISVTX else f"owned by uid {info.st_uid}"
            raise PermissionError(
                errno.EPERM,
                f"offload_dir {self.path} is open to other users (mode {mode:04o}) and is {whose}, "
                "so it is not changed: set offload_dir to a private folder of the gateway's user",
            )
        os.chmod(self.path, 0o700)
        logger.warning(
            "offload_dir %s was open to other users (mode %04o): changed to 0700, as offloaded "
            "results may hold private data",
            self.path,
            mode,
        )
        return self.path

    def write(self, chunks: Iterable[str]) -> str:
        """Write the payload atomically; returns the new file's name. Raises OSError when it cannot."""
        folder = self.ensure()
        name = f"{FILE_PREFIX}{uuid.uuid4().hex}{FILE_SUFFIX}"
        temp = folder / f".{name}.tmp"
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                for chunk in chunks:
                    for start in range(0, len(chunk), _CHUNK_CHARS):
                        out.write(chunk[start : start + _CHUNK_CHARS].encode("utf-8", "surrogatepass"))
            os.replace(temp, folder / name)
        except BaseException:
            with contextlib.suppress(OSError):
                temp.unlink()
            raise
        self.prune(keep=name)
        return name

    def exists(self, name: str) -> bool:
        return (self.path / name).is_file()

    def read_text(self, name: str) -> str:
        return (self.path / name).read_text(encoding="utf-8", errors="replace")

    def files(self) -> list[tuple[float, int, Path]]:
        """(mtime, size, path) of every offloaded file, oldest first."""
        found = []
        try:
            entries = list(os.scandir(self.path))
        except FileNotFoundError:
            return []
        for entry in entries:
            if entry.name.startswith(FILE_PREFIX) and entry.name.endswith(FILE_SUFFIX):
                with contextlib.suppress(FileNotFoundError):
                    stat = entry.stat()
                    found.append((stat.st_mtime, stat.st_size, Path(entry.path)))
        return sorted(found)

    def prune(self, keep: str | None = None) -> int:
        """Apply retention; `keep` (the file just written) survives even if alone it is over the size."""
        now = time.time()
        removed = 0
        kept: list[tuple[float, int, Path]] = []
        for mtime, size, path in self.files():
            if path.name != keep and now - mtime > self.max_age:
                removed += _remove(path)
            else:
                kept.append((mtime, size, path))
        total = sum(size for _, size, _ in kept)
        for _mtime, size, path in kept:
            if total <= self.max_bytes:
                break
            if path.name == keep:
                continue
            removed += _remove(path)
            total -= size
        return removed


def _remove(path: Path) -> int:
    try:
        path.unlink()
        return 1
    except FileNotFoundError:
        return 0
    except OSError as exc:
        logger.warning("could not remove offloaded file %s: %s", path, exc)
        return 0
