"""The pinned tool definitions: one small JSON file in the data folder, written atomically.

A pin is (server, what the server runs, tool name) -> the digest of the definition first
seen (or last approved), with the definition itself so a later change can be shown field by
field. "What the server runs" is a digest of its command, args, cwd, url and module: an
operator who points a server elsewhere (a new package version in `args`) has chosen what it
offers, so its tools are pinned afresh; a server that changes its tools while configured the
same has not been chosen again. Secrets (env, headers, api_key) are left out of it so that
rotating a token does not unpin anything.

Bounded: at most `max_pins` pins (the least recently seen go first) and definitions over
`MAX_DEFINITION_CHARS` are kept by digest only. Every write replaces the file in one rename
(a crash leaves the old file or the new one) after merging in what another process wrote
since it was read, so two gateways sharing a data folder lose nothing of each other's.

`PinKeeper` is what tool_integrity.py needs of a store: this file, or the pins shared by
replicas through Redis (stores/redis_pins.py), which keeps this file as its local copy.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mcp_nexus.catalog.tool_definition import canonical, digest
from mcp_nexus.config.schema import ServerConfig
from mcp_nexus.paths import data_subdir

logger = logging.getLogger(__name__)

PINS_FILE = "tool_pins.json"
FORMAT_VERSION = 1
DEFAULT_MAX_PINS = 20_000
MAX_HELD = 1_000
MAX_DEFINITION_CHARS = 64 * 1024


def default_pins_path() -> Path:
    return data_subdir("integrity") / PINS_FILE


def server_identity(config: ServerConfig) -> str:
    """A short digest of what the server runs (see the module's docstring for why these fields)."""
    runs = config.model_dump(include={"transport", "command", "args", "cwd", "url", "module", "options"})
    return digest(runs)[:16]


@dataclass(slots=True)
class Pin:
    server: str
    identity: str
    tool: str
    digest: str
    definition: dict[str, Any] | None  # None when it was too large to keep
    pinned_at: float
    seen_at: float
    approved: bool = False  # pinned by an operator's approval rather than at first sight

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.server, self.identity, self.tool)

    def as_json(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "identity": self.identity,
            "tool": self.tool,
            "digest": self.digest,
            "definition": self.definition,
            "pinned_at": self.pinned_at,
            "seen_at": self.seen_at,
            "approved": self.approved,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Pin:
        definition = raw.get("definition")
        return cls(
            server=str(raw["server"]),
            identity=str(raw["identity"]),
            tool=str(raw["tool"]),
            digest=str(raw["digest"]),
            definition=definition if isinstance(definition, dict) else None,
            pinned_at=float(raw.get("pinned_at", 0.0)),
            seen_at=float(raw.get("seen_at", 0.0)),
            approved=bool(raw.get("approved", False)),
        )


class PinKeeper(Protocol):
    """Where tool integrity keeps pins and held definitions (PinStore, or shared: stores/redis_pins.py)."""

    @property
    def held(self) -> dict[str, dict[str, Any]]:
        """Digests of definitions held in quarantine -> {"server", "tool", "since"}."""
        ...

    @property
    def location(self) -> str:
        """Where the pins are, for people (a path, or a Redis URL and key)."""
        ...

    def get(self, server: str, identity: str, tool: str) -> Pin | None: ...

    def pins(self) -> list[Pin]: ...

    def pin(
        self, server: str, identity: str, tool: str, definition: dict[str, Any], *, approved: bool = False
    ) -> Pin: ...

    def remember_held(self, found: str, server: str, tool: str) -> None: ...

    def forget_held(self, found: str) -> None: ...

    def flush(self) -> None: ...


class PinStore:
    """The pins of one data folder, read once and written after each change."""

    def __init__(self, path: Path | None = None, *, max_pins: int = DEFAULT_MAX_PINS) -> None:
        self._path = path  # the default is looked up on first use: no I/O for gateways without tools
        self.max_pins = max_pins
        self._pins: dict[tuple[str, str, str], Pin] | None = None
        # Digests of definitions held in quarantine -> {"server", "tool", "since"}: a rename after a
        # restart is still recognised (tool_integrity.py).
        self.held: dict[str, dict[str, Any]] = {}
        self._read_mtime: float | None = None
        self._dirty: set[tuple[str, str, str]] = set()
        self._held_dirty = False
        self.writes = 0

    @property
    def path(self) -> Path:
        if self._path is None:
            self._path = default_pins_path()
        return self._path

    @property
    def location(self) -> str:
        return str(self.path)

    def _loaded(self) -> dict[tuple[str, str, str], Pin]:
        if self._pins is None:
            self._pins, held, self._read_mtime = self._read()
            self.held = {**held, **self.held}
        return self._pins

    def _read(self) -> tuple[dict[tuple[str, str, str], Pin], dict[str, dict[str, Any]], float | None]:
        try:
            mtime = self.path.stat().st_mtime
            document = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}, {}, None
        except (OSError, ValueError) as exc:
            # Not silently: an unreadable file means every tool is pinned afresh.
            logger.error("cannot read the tool pins %s (%s): tools will be pinned afresh", self.path, exc)
            return {}, {}, None
        if not isinstance(document, dict):
            document = {}
        held = document.get("held")
        held = {
            str(key): value
            for key, value in (held.items() if isinstance(held, dict) else [])
            if isinstance(value, dict)
            and isinstance(value.get("server"), str)
            and isinstance(value.get("tool"), str)
        }
        pins: dict[tuple[str, str, str], Pin] = {}
        for raw in document.get("pins", []):
            try:
                pin = Pin.from_json(raw)
            except (KeyError, TypeError, ValueError):
                continue  # one bad record costs that pin, not the others
            pins[pin.key] = pin
        return pins, held, mtime

    def get(self, server: str, identity: str, tool: str) -> Pin | None:
        return self._loaded().get((server, identity, tool))

    def pins(self) -> list[Pin]:
        return list(self._loaded().values())

    def pin(
        self, server: str, identity: str, tool: str, definition: dict[str, Any], *, approved: bool = False
    ) -> Pin:
        now = time.time()
        kept = definition if len(canonical(definition)) <= MAX_DEFINITION_CHARS else None
        pin = Pin(server, identity, tool, digest(definition), kept, now, now, approved)
        self.put(pin)
        return pin

    def put(self, pin: Pin) -> None:
        """Keep `pin` as it is (one another replica wrote): saved at the next flush."""
        self._loaded()[pin.key] = pin
        self._dirty.add(pin.key)

    def remember_held(self, found: str, server: str, tool: str) -> None:
        if found not in self._loaded_held():
            self.put_held(found, {"server": server, "tool": tool, "since": time.time()})

    def put_held(self, found: str, record: dict[str, Any]) -> None:
        """Remember a held definition with its record as given (its `since` kept)."""
        self._loaded_held()[found] = record
        while len(self.held) > MAX_HELD:
            del self.held[next(iter(self.held))]  # the oldest first (dicts keep insertion order)
        self._held_dirty = True

    def forget_held(self, found: str) -> None:
        if self._loaded_held().pop(found, None) is not None:
            self._held_dirty = True

    def _loaded_held(self) -> dict[str, dict[str, Any]]:
        self._loaded()
        return self.held

    def flush(self) -> None:
        """Write the pins changed since the last flush (nothing to do when none changed)."""
        if not self._dirty and not self._held_dirty:
            return
        pins = self._loaded()
        try:
            mtime = self.path.stat().st_mtime
        except OSError:
            mtime = None
        if mtime is not None and mtime != self._read_mtime:
            theirs, their_held, _ = self._read()  # another process wrote since: keep its pins, ours win
            self.held = {**their_held, **self.held}
            for key, pin in theirs.items():
                if key not in self._dirty:
                    pins[key] = pin
        if len(pins) > self.max_pins:
            for pin in sorted(pins.values(), key=lambda p: p.seen_at)[: len(pins) - self.max_pins]:
                del pins[pin.key]
        document = {
            "version": FORMAT_VERSION,
            "pins": [pin.as_json() for pin in pins.values()],
            "held": self.held,
        }
        try:
            self._write(json.dumps(document, ensure_ascii=False, separators=(",", ":")))
        except OSError as exc:
            logger.error("cannot save the tool pins to %s: %s (kept in memory)", self.path, exc)
            return
        self._dirty.clear()
        self._held_dirty = False
        self.writes += 1
        try:
            self._read_mtime = self.path.stat().st_mtime
        except OSError:
            self._read_mtime = None

    def _write(self, text: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        handle, temporary = tempfile.mkstemp(prefix=".pins-", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
