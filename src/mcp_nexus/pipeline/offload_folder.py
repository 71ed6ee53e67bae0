"""The sandbox data folder: where large results are written, and how long they stay.

Files are `tool_output_<uuid>.json`, written to a hidden temp name and renamed into place,
so python_sandbox never sees half a file (it refuses hidden names anyway). Retention runs
after each write: files older than `max_age` go, then the oldest until the total fits.

Ownership: each file belongs to the callers that received its alert (`Caller.identity`,
"frontend:client"). The owners are kept next to the file, in a hidden `.<name>.owner` file
of JSON lines written before the file appears (so no file is ever visible without its
owner) and removed with it: they survive a restart and are shared by gateways that share
the folder. A file without an owner record (written by an older Nexus or by hand) belongs
to nobody. python_sandbox mounts only files owned by the caller that asks.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import stat
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from mcp_nexus.paths import data_subdir

logger = logging.getLogger(__name__)

FILE_PREFIX = "tool_output_"
FILE_SUFFIX = ".json"
OWNER_SUFFIX = ".owner"
OFFLOAD_NAME = re.compile(r"tool_output_[0-9a-f]{32}\.json")  # what `write` names a file
_CHUNK_CHARS = 1 << 20  # encode and write 1 MiB at a time: no second full copy of a big payload
_OWNERS_KEPT = 4096  # owner sets remembered in memory (the files on disk are the truth)
_ORPHAN_GRACE_S = 60.0  # an owner file without its data file is left alone this long (a write in progress)


@dataclass(frozen=True, slots=True)
class OffloadedFile:
    """One offloaded file as a caller may be told about it."""

    name: str
    bytes: int
    age_s: float


def owner_file_name(name: str) -> str:
    """The hidden file beside `name` that lists its owners (python_sandbox refuses hidden names)."""
    return f".{name}{OWNER_SUFFIX}"


def default_offload_dir() -> Path:
    return data_subdir("offload")


class OffloadFolder:
    def __init__(self, path: Path, *, max_age: float, max_bytes: int) -> None:
        self.path = path
        self.max_age = max_age
        self.max_bytes = max_bytes
        self._owners: OrderedDict[str, frozenset[str]] = OrderedDict()  # name -> owners, recent ones
        self._owners_lock = threading.Lock()  # writes and sandbox calls update it from worker threads

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

    def write(self, chunks: Iterable[str], owner: str | None = None) -> str:
        """Write the payload atomically, owned by `owner` (a `Caller.identity`; None: nobody);
        returns the new file's name. Raises OSError when it cannot."""
        folder = self.ensure()
        name = f"{FILE_PREFIX}{uuid.uuid4().hex}{FILE_SUFFIX}"
        temp = folder / f".{name}.tmp"
        owners = folder / owner_file_name(name)
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                for chunk in chunks:
                    for start in range(0, len(chunk), _CHUNK_CHARS):
                        out.write(chunk[start : start + _CHUNK_CHARS].encode("utf-8", "surrogatepass"))
            if owner is not None:
                _append_owner(owners, owner, exclusive=True)
            os.replace(temp, folder / name)
        except BaseException:
            for leftover in (temp, owners):
                with contextlib.suppress(OSError):
                    leftover.unlink()
            raise
        self._remember(name, frozenset(() if owner is None else (owner,)))
        self.prune(keep=name)
        return name

    # -- ownership ---------------------------------------------------------------------------

    def _remember(self, name: str, owners: frozenset[str]) -> None:
        with self._owners_lock:
            self._owners[name] = owners
            self._owners.move_to_end(name)
            while len(self._owners) > _OWNERS_KEPT:
                self._owners.popitem(last=False)

    def owners(self, name: str) -> frozenset[str]:
        """Who owns `name` (empty for a file that is gone, has no owner record, or is no offload)."""
        if not OFFLOAD_NAME.fullmatch(name):
            return frozenset()
        known = self._owners.get(name)
        if known is not None and self.exists(name):
            return known
        try:
            lines = (self.path / owner_file_name(name)).read_text(encoding="utf-8").splitlines()
        except OSError:
            return frozenset()
        owners = frozenset(_parse_owner(line) for line in lines) - {""}
        if self.exists(name):
            self._remember(name, owners)
            return owners
        return frozenset()

    def owned_by(self, name: str, owner: str) -> bool:
        return owner in self.owners(name)

    def known_owner(self, name: str, owner: str) -> bool:
        """True when memory already says `owner` owns `name` (no disk access: for every alert served)."""
        known = self._owners.get(name)
        return known is not None and owner in known

    def share(self, name: str, owner: str) -> bool:
        """Add `owner` to an existing file's owners (a caller served its alert from the cache);
        False when the file is gone. Raises OSError when the record cannot be written."""
        if self.known_owner(name, owner):
            return True
        owners = self.owners(name)
        if owner in owners:
            return True
        if not self.exists(name):
            return False
        _append_owner(self.path / owner_file_name(name), owner, exclusive=False)
        self._remember(name, owners | {owner})
        return True

    def owned_files(self, owner: str, limit: int = 5) -> list[OffloadedFile]:
        """The newest files `owner` may read, newest first (at most `limit`)."""
        now = time.time()
        found: list[OffloadedFile] = []
        for mtime, size, path in reversed(self.files()):
            if self.owned_by(path.name, owner):
                found.append(OffloadedFile(path.name, size, max(0.0, now - mtime)))
                if len(found) >= limit:
                    break
        return found

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
        self._remove_orphan_owner_files(now)
        return removed

    def _remove_orphan_owner_files(self, now: float) -> None:
        """Owner records whose file is gone (removed by hand, or a crash between the two writes)."""
        try:
            entries = list(os.scandir(self.path))
        except OSError:
            return
        for entry in entries:
            if not (entry.name.startswith("." + FILE_PREFIX) and entry.name.endswith(OWNER_SUFFIX)):
                continue
            data_name = entry.name[1 : -len(OWNER_SUFFIX)]
            with contextlib.suppress(OSError):
                if not (self.path / data_name).exists() and now - entry.stat().st_mtime > _ORPHAN_GRACE_S:
                    os.unlink(entry.path)
                    with self._owners_lock:
                        self._owners.pop(data_name, None)


def _append_owner(path: Path, owner: str, *, exclusive: bool) -> None:
    """One JSON line per owner; O_APPEND keeps concurrent appends (even from two gateways) whole."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | (os.O_EXCL if exclusive else 0)
    fd = os.open(path, flags, 0o600)
    try:
        os.write(fd, (json.dumps(owner, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass"))
    finally:
        os.close(fd)


def _parse_owner(line: str) -> str:
    try:
        value = json.loads(line)
    except ValueError:
        return ""
    return value if isinstance(value, str) else ""


def _remove(path: Path) -> int:
    with contextlib.suppress(FileNotFoundError):
        (path.parent / owner_file_name(path.name)).unlink()
    try:
        path.unlink()
        return 1
    except FileNotFoundError:
        return 0
    except OSError as exc:
        logger.warning("could not remove offloaded file %s: %s", path, exc)
        return 0
