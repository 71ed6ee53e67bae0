"""Tool integrity: a tool whose definition changed after it was first seen is held until approved.

The catalog hands every server's admitted tools here at each rebuild (catalog.py). For each:

- its definition matches the pin (tool_pins.py): it passes;
- no pin yet: it is scanned (description_scan.py); clean, it is pinned and passes. With a
  finding it is held when the server's `integrity` is `quarantine` (and not pinned: a
  restart must not turn it into an approved tool), passes flagged under `warn`;
- a pin that differs: held under `quarantine` (not listed, calls refused naming what
  changed), passes flagged under `warn`;
- a new name whose definition is one already held (a renamed tool) stays held.

`integrity: off` skips all of it; built-in servers (Nexus's own code) are never held. An
operator approves a held tool (`nexus tools approve`, the admin API, the dashboard): its
current definition becomes the pin. Held definitions are remembered in the pin file by
digest, so a rename after a restart is still caught. With `stores.pins` on Redis the pins
and held digests are those of every replica (stores/redis_pins.py): what one replica pinned
is what another compares against, and an approval on one releases the tool on all.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

import mcp_types as types

from mcp_nexus.catalog.description_scan import Finding, scan
from mcp_nexus.catalog.tool_admission import is_builtin
from mcp_nexus.catalog.tool_definition import changed_fields, definition, digest
from mcp_nexus.catalog.tool_names import printable
from mcp_nexus.catalog.tool_pins import PinKeeper, PinStore, server_identity
from mcp_nexus.upstream.upstream import Upstream

logger = logging.getLogger(__name__)

IntegrityMode = Literal["quarantine", "warn", "off"]
HoldReason = Literal["changed", "flagged", "renamed"]


@dataclass(slots=True)
class Hold:
    """One tool whose definition is not the approved one (or reads as hostile)."""

    server: str
    tool: str  # the server's own name for it
    exposed: str  # the name clients would see
    mode: IntegrityMode  # quarantine: held; warn: listed, flagged
    reason: HoldReason
    digest: str
    current: dict[str, Any]
    pinned: dict[str, Any] | None = None  # the approved definition (None: never approved)
    changed: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    like: str | None = None  # for a renamed tool: the held tool whose definition it has
    since: float = field(default_factory=time.time)

    @property
    def quarantined(self) -> bool:
        return self.mode == "quarantine"

    @property
    def what(self) -> str:
        """What is wrong with it, in a few words."""
        parts = []
        if self.reason == "changed":
            parts.append(f"its definition changed since it was approved ({', '.join(self.changed)})")
        elif self.reason == "renamed":
            parts.append(f"it has the definition of held tool {self.like!r}")
        if self.findings:
            kinds = sorted({f.kind for f in self.findings})
            parts.append(f"its text looks like hidden instructions ({', '.join(kinds)})")
        return "; ".join(parts)

    @property
    def message(self) -> str:
        """The error a caller gets."""
        return (
            f"tool {self.exposed!r} of server {self.server!r} is quarantined: {self.what}; "
            f"an operator must approve it first (nexus tools approve {self.server}.{printable(self.tool)})"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "tool": printable(self.tool),
            "exposed": self.exposed,
            "mode": self.mode,
            "quarantined": self.quarantined,
            "reason": self.reason,
            "what": self.what,
            "changed": self.changed,
            "findings": [finding.as_json() for finding in self.findings],
            "like": self.like,
            "digest": self.digest,
            "since": self.since,
            "pinned": self.pinned,
            "current": self.current,
        }


@dataclass(slots=True)
class _Seen:
    tool: types.Tool  # the object last judged: a refresh that returns equal tools costs no hashing
    definition: dict[str, Any]
    digest: str


class ToolIntegrity:
    """Pins, holds and findings of one gateway (one per catalog)."""

    def __init__(self, store: PinKeeper | None = None) -> None:
        self._store = store
        self.holds: dict[tuple[str, str], Hold] = {}  # (server, tool) -> why it is held or flagged
        self._by_exposed: dict[str, Hold] = {}  # exposed name -> a quarantined tool's hold
        self._seen: dict[tuple[str, str], _Seen] = {}
        self._scanned: dict[str, list[Finding]] = {}  # digest -> findings (scan once per definition)
        self._counted: set[tuple[str, str, str, str]] = set()  # (server, tool, digest, kind)
        self._logged: set[tuple[str, str, str]] = set()  # (server, tool, digest)
        self.flags_total: Counter[str] = Counter()  # findings by kind, each definition counted once

    @property
    def store(self) -> PinKeeper:
        if self._store is None:  # the default file, opened on first use (no I/O for gateways without tools)
            self._store = PinStore()
        return self._store

    @store.setter
    def store(self, store: PinKeeper) -> None:
        """Where pins live (the gateway sets the one `stores.pins` chooses, before its first rebuild)."""
        self._store = store

    # -- judging ------------------------------------------------------------------------------

    def screen(
        self, upstream: Upstream, admitted: list[tuple[str, types.Tool]]
    ) -> list[tuple[str, types.Tool]]:
        """The admitted tools that may be listed; holds of this server are recomputed."""
        config = upstream.config
        server = upstream.name
        before = {key[1]: hold for key, hold in self.holds.items() if key[0] == server}
        held_digests = {h.digest: h for h in self.holds.values() if h.quarantined}
        for tool_name in before:
            self._forget(server, tool_name)
        mode: IntegrityMode = config.integrity
        if mode == "off" or is_builtin(config):
            return admitted
        identity = server_identity(config)
        kept: list[tuple[str, types.Tool]] = []
        names = {tool.name for _exposed, tool in admitted}
        for exposed, tool in admitted:
            seen = self._definition(server, tool)
            hold = self._judge(server, identity, mode, exposed, tool.name, seen, held_digests, names)
            if hold is not None:
                previous = before.get(tool.name)
                if previous is not None and previous.digest == hold.digest:
                    hold.since = previous.since
                self._hold(hold)
            if hold is None or not hold.quarantined:
                kept.append((exposed, tool))
        self.store.flush()
        return kept

    def _definition(self, server: str, tool: types.Tool) -> _Seen:
        key = (server, tool.name)
        seen = self._seen.get(key)
        if seen is None or seen.tool is not tool:
            pinned = definition(tool)
            seen = self._seen[key] = _Seen(tool, pinned, digest(pinned))
        return seen

    def _findings(self, seen: _Seen) -> list[Finding]:
        found = self._scanned.get(seen.digest)
        if found is None:
            if len(self._scanned) > 10_000:  # bounded: a server churning definitions cannot grow it
                self._scanned.clear()
            found = self._scanned[seen.digest] = scan(seen.definition)
        return found

    def _judge(
        self,
        server: str,
        identity: str,
        mode: IntegrityMode,
        exposed: str,
        tool_name: str,
        seen: _Seen,
        held_digests: dict[str, Hold],
        names: set[str],
    ) -> Hold | None:
        store = self.store
        pin = store.get(server, identity, tool_name)
        if pin is not None and pin.digest == seen.digest:
            pin.seen_at = time.time()
            return None
        findings = self._findings(seen)
        hold = Hold(
            server, tool_name, exposed, mode, "flagged", seen.digest, seen.definition, findings=findings
        )
        if pin is None:
            like = self._renamed_from(server, tool_name, seen.digest, held_digests, names)
            if like is not None:
                hold.reason, hold.like = "renamed", like
                return hold
            if not findings or mode == "warn":
                store.pin(server, identity, tool_name, seen.definition)
            return hold if findings else None
        hold.reason, hold.pinned = "changed", pin.definition
        hold.changed = (
            changed_fields(pin.definition, seen.definition) if pin.definition is not None else ["definition"]
        )
        return hold

    def _renamed_from(
        self, server: str, tool_name: str, found: str, held_digests: dict[str, Hold], names: set[str]
    ) -> str | None:
        """The held tool ("server.tool") a new tool is a rename of: same definition, and on the same
        server that tool is gone (two tools sharing a plain definition are not a rename)."""
        like = held_digests.get(found)
        if like is not None:
            held_server, held_tool = like.server, like.tool
        else:
            remembered = self.store.held.get(found)  # held before a restart
            if remembered is None:
                return None
            held_server, held_tool = remembered["server"], remembered["tool"]
        if held_server == server and (held_tool == tool_name or held_tool in names):
            return None
        return f"{held_server}.{printable(held_tool)}"

    def _hold(self, hold: Hold) -> None:
        self.holds[(hold.server, hold.tool)] = hold
        if hold.quarantined:
            self._by_exposed[hold.exposed] = hold
            self.store.remember_held(hold.digest, hold.server, hold.tool)
        for finding in hold.findings:
            counted = (hold.server, hold.tool, hold.digest, finding.kind)
            if counted not in self._counted:
                self._counted.add(counted)
                self.flags_total[finding.kind] += 1
        logged = (hold.server, hold.tool, hold.digest)
        if logged not in self._logged:
            self._logged.add(logged)
            verdict = "quarantined" if hold.quarantined else "flagged (integrity: warn, still listed)"
            logger.warning(
                "server %s: tool '%s' %s: %s", hold.server, printable(hold.tool), verdict, hold.what
            )
            for finding in hold.findings:
                logger.warning("server %s: tool '%s': %s", hold.server, printable(hold.tool), finding)

    def _forget(self, server: str, tool_name: str) -> None:
        hold = self.holds.pop((server, tool_name), None)
        if hold is not None and self._by_exposed.get(hold.exposed) is hold:
            del self._by_exposed[hold.exposed]

    # -- reading and approving ------------------------------------------------------------------

    def quarantined(self, exposed: str) -> Hold | None:
        """The hold of the quarantined tool clients would know as `exposed` (None: not quarantined)."""
        return self._by_exposed.get(exposed)

    def pending(self) -> list[Hold]:
        return sorted(self.holds.values(), key=lambda h: (h.server, h.tool))

    def approve(self, upstreams: dict[str, Upstream], server: str | None, tool: str | None) -> list[Hold]:
        """Pin the current definition of the held tools named (a server's all when `tool` is None; every
        held tool when both are None). Returns what was approved; the caller rebuilds the catalog."""
        approved = []
        for hold in self.pending():
            if server is not None and hold.server != server:
                continue
            if tool is not None and tool not in (hold.tool, printable(hold.tool), hold.exposed):
                continue
            upstream = upstreams.get(hold.server)
            if upstream is None:
                continue
            self.store.pin(
                hold.server, server_identity(upstream.config), hold.tool, hold.current, approved=True
            )
            self.store.forget_held(hold.digest)
            self._forget(hold.server, hold.tool)
            logger.warning("server %s: tool '%s' approved by an operator", hold.server, printable(hold.tool))
            approved.append(hold)
        self.store.flush()
        return approved
