"""The gateway's servers: one `Upstream` and its `Supervisor` per configured server, and what is
done to them as a whole (first starts, an operator's start/stop, a reload's diff).

Why apart from the gateway: the gateway binds servers, catalog, governance and pipelines into
the operations frontends use; which servers run, how they are started, controlled and swapped
by a reload is one responsibility of its own. `Gateway.upstreams` and `Gateway.supervisors`
are this set's mappings (the same objects), so readers of the gateway see every change.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from mcp_nexus.config.schema import NexusConfig, ServerConfig
from mcp_nexus.events import EventBus
from mcp_nexus.relay import CallerRelay
from mcp_nexus.reload_report import ReloadReport
from mcp_nexus.upstream.client_era import ClientEra
from mcp_nexus.upstream.config_diff import ConfigDiff
from mcp_nexus.upstream.state import UpstreamState
from mcp_nexus.upstream.supervisor import Supervisor
from mcp_nexus.upstream.upstream import Upstream

logger = logging.getLogger(__name__)

StartProgress = Callable[[Upstream], None]


class UnknownServerError(KeyError):
    """No server of that name (the admin API answers 404 with the names there are)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"no server named {self.name!r}"


class ServerSet:
    """Upstreams and supervisors by name; first starts tracked; control and reload of servers."""

    def __init__(
        self, config: NexusConfig, events: EventBus, relay: CallerRelay, client_era: ClientEra | None = None
    ) -> None:
        self.events = events
        self.relay = relay
        self.client_era = client_era
        self.upstreams: dict[str, Upstream] = {
            name: self.new_upstream(server) for name, server in config.servers.items()
        }
        # One supervisor per upstream: restart policy and health checks (upstream/supervisor.py).
        self.supervisors: dict[str, Supervisor] = {
            name: Supervisor(upstream, startup_timeout=config.gateway.startup_timeout)
            for name, upstream in self.upstreams.items()
        }
        self._starts: set[asyncio.Task[None]] = set()

    def new_upstream(self, server: ServerConfig) -> Upstream:
        return Upstream(server, events=self.events, relay=self.relay, client_era=self.client_era)

    # -- first starts ----------------------------------------------------------------------

    def start_in_background(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.ensure_future(work)
        self._starts.add(task)
        task.add_done_callback(self._starts.discard)
        return task

    def start_all(self, on_progress: StartProgress | None = None) -> dict[str, asyncio.Task[None]]:
        """Start every enabled, auto-starting server, each in the background; returns the starts by name."""

        async def start_one(name: str) -> None:
            upstream = self.upstreams[name]
            if upstream.config.enabled and upstream.config.auto_start:
                await self.supervisors[name].start()
            if on_progress is not None:
                on_progress(upstream)

        return {name: self.start_in_background(start_one(name)) for name in list(self.upstreams)}

    @property
    def first_starts_pending(self) -> bool:
        """Some server is still in its first start (at launch, or added by a reload)."""
        return any(not task.done() for task in self._starts)

    async def wait_first_starts(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the servers still in their first start; True when none is left.

        A server that fails its first start ends it too (its supervisor retries in the
        background); a hung one is waited for only up to `timeout`.
        """
        pending = [task for task in self._starts if not task.done()]
        if pending and timeout > 0:
            await asyncio.wait(pending, timeout=timeout)
        return not self.first_starts_pending

    async def close(self) -> None:
        """Stop every server (children reaped, sessions closed); starts in progress are cancelled."""
        await asyncio.gather(*(s.close() for s in self.supervisors.values()))
        for task in list(self._starts):
            task.cancel()
        await asyncio.gather(*self._starts, return_exceptions=True)

    # -- an operator's control of one server ------------------------------------------------

    def supervisor(self, name: str) -> Supervisor:
        try:
            return self.supervisors[name]
        except KeyError:
            raise UnknownServerError(name) from None

    async def start(self, name: str) -> Upstream:
        """Start one server (after a stop, or to retry one that was given up)."""
        supervisor = self.supervisor(name)
        await supervisor.start()
        return supervisor.upstream

    async def stop(self, name: str) -> Upstream:
        """Stop one server and keep it stopped: its tools leave the catalog, its cache entries go."""
        supervisor = self.supervisor(name)
        await supervisor.stop()
        return supervisor.upstream

    async def restart(self, name: str) -> Upstream:
        supervisor = self.supervisor(name)
        await supervisor.restart()
        return supervisor.upstream

    async def set_enabled(self, name: str, enabled: bool, config: NexusConfig) -> Upstream:
        """Enable or disable one server, written into `config` (the gateway's current one)."""
        supervisor = self.supervisor(name)
        upstream = supervisor.upstream
        if upstream.config.enabled != enabled:
            upstream.config = upstream.config.model_copy(update={"enabled": enabled})
            config.servers[name] = upstream.config
        if enabled:
            await supervisor.start()
        else:
            await supervisor.stop(reason="disabled by operator")
        return upstream

    # -- a reload's diff -------------------------------------------------------------------

    async def apply(self, diff: ConfigDiff, report: ReloadReport, new: NexusConfig) -> None:
        """Removed servers stop, added ones start in the background, changed ones take their new
        entry (reconnecting only when `report` says a connection field changed)."""
        for supervisor in self.supervisors.values():
            supervisor.startup_timeout = new.gateway.startup_timeout

        async def remove(name: str) -> None:
            supervisor = self.supervisors.pop(name)
            self.upstreams.pop(name, None)
            await supervisor.close()
            supervisor.upstream.mark(UpstreamState.STOPPED, "removed from the config")

        async def change(name: str) -> None:
            supervisor, upstream = self.supervisors[name], self.upstreams[name]
            if name in report.restarted:
                await supervisor.stop(reason="config changed: reconnecting")
                upstream.config = new.servers[name]
                supervisor.apply_config()
                if upstream.config.enabled:
                    await supervisor.start()
                else:
                    upstream.mark(UpstreamState.DISABLED, "disabled in config")
                return
            upstream.config = new.servers[name]
            supervisor.apply_config()
            if name in report.enabled:
                await supervisor.start()
            elif name in report.disabled:
                await supervisor.stop(reason="disabled in config")

        async def add(name: str) -> None:
            upstream = self.new_upstream(new.servers[name])
            self.upstreams[name] = upstream
            supervisor = self.supervisors[name] = Supervisor(
                upstream, startup_timeout=new.gateway.startup_timeout
            )
            if upstream.config.enabled and upstream.config.auto_start:
                # In the background, like at startup: a slow new server must not hold the
                # reload (and the next one, which may remove it again) hostage.
                self.start_in_background(supervisor.start())

        await asyncio.gather(*(remove(n) for n in diff.removed))
        await asyncio.gather(*(change(c.name) for c in diff.changed), *(add(n) for n in diff.added))
