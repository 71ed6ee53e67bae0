"""Filling and saving the tool index under the controller design's rules (docs/CONTROL.md, "Tool index").

At start (`start`), the design's four checks decide whether the saved snapshot is used as is:
`force_refresh_on_init` off, a saved snapshot exists, it is younger than `cache_ttl_seconds`,
and it holds tools. Otherwise every server is asked for its tools once the starts have
settled (`sync`), and:

- at least one server answered -> the answers are the new snapshot, saved;
- every server failed but a snapshot exists -> it is served as is, marked stale;
- every server failed and nothing was saved -> the index is empty.

After that the index follows the servers: when the aggregated tool list changes (a server
joined, announced tools/list_changed, or a reload changed it), the ready servers whose tools
differ from their entries get new entries and the snapshot is saved (incremental sync). A
snapshot older than `cache_ttl_seconds` is synced again, unless the store holds a newer one
that is still fresh (another replica sharing it, stores.index in Redis, synced since): that one
is adopted. A stale one is retried every minute and as soon as a server is back (an empty
index too, every minute).

The config's chains are entries too (index_chains.py): set from the config at start and again
on every applied config (a reload adds, changes and removes them), never saved with the snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from mcp_nexus.catalog.index import ServerIndexStatus, ToolIndex
from mcp_nexus.catalog.index_chains import chain_entries
from mcp_nexus.catalog.index_entries import entries_for_server
from mcp_nexus.catalog.index_entry import IndexEntry
from mcp_nexus.catalog.index_snapshot import IndexSnapshot, parse_iso, utc_now_iso
from mcp_nexus.catalog.index_store import IndexStore, IndexStoreError
from mcp_nexus.catalog.names import exposed_name
from mcp_nexus.catalog.tags import Tagger
from mcp_nexus.catalog.tool_admission import ToolAdmission
from mcp_nexus.config.config_applied import ConfigApplied
from mcp_nexus.config.schema import IndexSettings, NexusConfig
from mcp_nexus.config.secrets import SecretRedactor
from mcp_nexus.events import ListChanged
from mcp_nexus.upstream.upstream import Upstream

logger = logging.getLogger(__name__)

STALE_RETRY_S = 60.0
"""How often a stale index (every server failed) asks again, at most."""
FAILED_FOLLOW_S = 2.0
"""After a sync in which some servers failed, how soon the ready ones among them are taken from
their live lists (a server slow to answer on a busy host is READY, with no list change to come)."""


class IndexSync:
    def __init__(
        self,
        index: ToolIndex,
        store: IndexStore | None,
        current: Callable[[], NexusConfig],
        upstreams: Callable[[], Mapping[str, Upstream]],
    ) -> None:
        self.index = index
        self.store = store
        self._current = current
        self._upstreams = upstreams
        self._lock = asyncio.Lock()
        self._settled = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._timer: asyncio.Task[None] | None = None
        self._incremental_pending = False
        self._failed_follow_pending = False
        self._tagger: tuple[dict[str, list[str]], Tagger] | None = None
        self._closed = False
        # Told the snapshot's last_sync after each successful save (index_fanout.py tells other replicas).
        self.saved_listeners: list[Callable[[str | None], None]] = []
        if store is not None:
            index.status.saved_to = store.location

    # -- settings ----------------------------------------------------------------------------

    @property
    def settings(self) -> IndexSettings:
        return self._current().gateway.index

    def tagger(self) -> Tagger:
        rules = self.settings.tag_rules
        if self._tagger is None or self._tagger[0] != rules:
            self._tagger = (dict(rules), Tagger(rules))
            self.index.tagger = self._tagger[1]
        return self._tagger[1]

    def namer(self, server_id: str, tool_name: str) -> str:
        """The exposed name of an imported tool: its server's namespace when that server is configured."""
        config = self._current()
        server = config.servers.get(server_id)
        namespace = server.effective_namespace if server is not None else server_id
        return exposed_name(namespace, tool_name, config.gateway.name_separator)

    # -- lifetime ----------------------------------------------------------------------------

    async def start(self, servers_started: Awaitable[Any] | None = None) -> None:
        """Load the saved snapshot and apply the start rules; a needed sync runs once `servers_started` is done."""
        self.tagger()  # queries are tagged with the operator's rules too
        self.index.ranking = self._current().gateway.tool_search.ranking
        self._index_chains()
        saved = self._configured_only(await self._load())
        settings = self.settings
        reason = self._refresh_reason(saved, settings)
        status = self.index.status
        if reason is None and saved is not None:
            age = saved.age_seconds() or 0.0
            self._serve_cached(
                saved,
                f"serving the saved index of {saved.last_sync} "
                f"(valid for another {max(0.0, settings.cache_ttl_seconds - age):.0f} s)",
            )
            self._settled.set()
            self._start_timer()
            return
        if saved is not None:
            self.index.set_snapshot(saved)  # served (as stale) until the sync has an answer
        status.source, status.stale = "loading", saved is not None
        status.message = f"syncing: {reason}"
        self._spawn(self._initial_sync(servers_started, reason or "no saved index"))

    async def _initial_sync(self, servers_started: Awaitable[Any] | None, reason: str) -> None:
        try:
            if servers_started is not None:
                await servers_started
            await self.sync(reason)
        except Exception:  # the index stays as loaded; the periodic sync tries again
            logger.exception("tool index: the first sync failed")
        finally:
            self._settled.set()
        self._start_timer()

    async def stop(self) -> None:
        self._closed = True
        tasks = [*self._tasks, *([self._timer] if self._timer is not None else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def wait_settled(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the start rules to have decided (cache used or first sync done)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._settled.wait()
        return self._settled.is_set()

    @staticmethod
    def _refresh_reason(saved: IndexSnapshot | None, settings: IndexSettings) -> str | None:
        """Why the saved snapshot cannot be used as is (the design's four checks, in its order)."""
        if settings.force_refresh_on_init:
            return "force_refresh_on_init is set"
        if saved is None:
            return "no saved index"
        age = saved.age_seconds()
        if age is None or age >= settings.cache_ttl_seconds:
            return f"the saved index is older than cache_ttl_seconds ({settings.cache_ttl_seconds:g} s)"
        if not saved.has_tools:
            return "the saved index holds no tools"
        return None

    # -- full sync ---------------------------------------------------------------------------

    def _participants(self) -> list[Upstream]:
        upstreams = [u for u in self._upstreams().values() if u.config.enabled]
        return sorted(upstreams, key=lambda u: (-u.config.effective_priority, u.name))

    async def sync(self, reason: str = "requested") -> dict[str, Any]:
        """Ask every enabled server for its tools and apply the three rules; returns the status."""
        async with self._lock:
            upstreams = self._participants()
            answers = await asyncio.gather(*(self._ask(u) for u in upstreams))
            now = utc_now_iso()
            config = self._current()
            previous = self._by_server()
            tagger = self.tagger()
            answered: dict[str, tuple[IndexEntry, ...]] = {}
            states: dict[str, ServerIndexStatus] = {}
            admission = self._admission()
            for upstream, error in zip(upstreams, answers, strict=True):
                if error is not None:
                    states[upstream.name] = ServerIndexStatus("failed", 0, error)
                    continue
                entries = entries_for_server(
                    upstream.config,
                    [tool for _name, tool in admission.admit(upstream).tools],
                    separator=config.gateway.name_separator,
                    tagger=tagger,
                    now=now,
                    previous=previous.get(upstream.name),
                )
                answered[upstream.name] = entries
                states[upstream.name] = ServerIndexStatus("synced", len(entries), None, now)
            status = self.index.status
            status.syncs += 1
            failed = [name for name, state in states.items() if state.state == "failed"]
            if answered:
                snapshot = IndexSnapshot(answered, now)
                self.index.set_snapshot(snapshot)
                status.source, status.stale = "sync", False
                status.message = f"synced {len(answered)} of {len(states)} servers at {now} ({reason})" + (
                    f"; failed: {', '.join(failed)}" if failed else ""
                )
                status.servers = states
                await self._save(snapshot)
                if failed and not self._failed_follow_pending:
                    self._failed_follow_pending = True
                    self._spawn(self._follow_failed(failed))
            elif self.index.snapshot.has_tools:
                kept = self.index.snapshot
                status.source, status.stale = "stale-cache", True
                status.message = (
                    f"every server failed to list its tools ({reason}); serving the saved index of "
                    f"{kept.last_sync or 'an unknown time'}"
                )
                status.servers = {
                    **{
                        server_id: ServerIndexStatus("cached", len(tools), None, kept.last_sync)
                        for server_id, tools in kept.servers.items()
                    },
                    **{name: state for name, state in states.items() if name not in kept.servers},
                }
                for name in failed:
                    if name in status.servers:
                        status.servers[name].error = states[name].error
            else:
                self.index.set_snapshot(IndexSnapshot())
                status.source, status.stale = "empty", False
                status.message = (
                    f"no server listed its tools and no index was saved ({reason}): the index is empty"
                )
                status.servers = states
            logger.info("tool index: %s", status.message)
            return self.describe()

    async def _ask(self, upstream: Upstream) -> str | None:
        """Ask one server for its tools now; None when it answered, else why not."""
        timeout = self.settings.sync_timeout
        if upstream.connecting:
            await upstream.wait_ready(timeout)
        if not upstream.is_ready:
            why = f": {upstream.last_error}" if upstream.last_error else ""
            return f"{upstream.state}{why}"
        try:
            async with asyncio.timeout(timeout):
                await upstream.refresh_tools()
        except TimeoutError:
            return f"tools/list took longer than {timeout:g} s"
        except Exception as exc:  # any failure of one server is that server's result, never the sync's
            # Shown in /api/index and logs: a URL with a token in it must not leak (config/secrets.py).
            return SecretRedactor.for_server(upstream.config).redact(f"tools/list failed: {exc}")
        return None

    # -- incremental sync --------------------------------------------------------------------

    def on_list_change(self, event: ListChanged) -> None:
        """The aggregated tool list changed; update the servers that changed."""
        if event.kind != "tools" or self._closed or self._incremental_pending:
            return
        self._incremental_pending = True
        self._spawn(self._incremental())

    async def _incremental(self) -> None:
        try:
            await self._follow_servers()
        except Exception:  # one bad update must not stop the next ones
            logger.exception("tool index: incremental update failed")

    async def _follow_failed(self, failed: list[str]) -> None:
        """Take the live lists of servers that failed a sync but are ready now (once, shortly after)."""
        try:
            await asyncio.sleep(FAILED_FOLLOW_S)
            upstreams = self._upstreams()
            if any(name in upstreams and upstreams[name].is_ready for name in failed):
                await self._follow_servers()
        except Exception:  # the periodic sync tries again
            logger.exception("tool index: following the servers that failed the sync")
        finally:
            self._failed_follow_pending = False

    async def _follow_servers(self) -> None:
        async with self._lock:
            self._incremental_pending = False
            status = self.index.status
            ready = [u for u in self._participants() if u.is_ready]
            if status.stale and status.source == "stale-cache" and ready:
                resync = True
            else:
                resync = False
                self._apply_live(ready)
        if resync:  # a server is back after every one failed: the design's rules decide again
            await self.sync("a server is back")

    def _apply_live(self, ready: list[Upstream]) -> None:
        config = self._current()
        now = utc_now_iso()
        previous = self._by_server()
        servers = dict(self.index.snapshot.servers)
        changed = False
        admission = self._admission()
        for server_id in [s for s in servers if s not in config.servers]:
            del servers[server_id]  # removed from the config
            self.index.status.servers.pop(server_id, None)
            changed = True
        for upstream in ready:
            entries = entries_for_server(
                upstream.config,
                [tool for _name, tool in admission.admit(upstream).tools],
                separator=config.gateway.name_separator,
                tagger=self.tagger(),
                now=now,
                previous=previous.get(upstream.name),
            )
            old = servers.get(upstream.name)
            if old is not None and [e.digest for e in old] == [e.digest for e in entries]:
                continue
            servers[upstream.name] = entries
            self.index.status.servers[upstream.name] = ServerIndexStatus("synced", len(entries), None, now)
            changed = True
        if not changed:
            return
        order = {u.name: i for i, u in enumerate(self._participants())}
        ordered = dict(sorted(servers.items(), key=lambda item: order.get(item[0], len(order))))
        snapshot = IndexSnapshot(ordered, self.index.snapshot.last_sync)
        self.index.set_snapshot(snapshot)
        if self.index.status.source == "empty":
            self.index.status.source = "sync"
            self.index.status.message = f"updated from live servers at {now}"
        self._spawn(self._save_latest())

    async def _save_latest(self) -> None:
        async with self._lock:
            await self._save(self.index.snapshot)

    async def adopt_newer(self) -> bool:
        """Serve the saved snapshot instead of syncing when it is newer than ours and still fresh:
        another replica sharing the store (stores.index in Redis) synced since. True when adopted."""
        saved = self._configured_only(await self._load())
        if saved is None or not saved.has_tools:
            return False
        theirs, mine = parse_iso(saved.last_sync), parse_iso(self.index.snapshot.last_sync)
        age = saved.age_seconds()
        if theirs is None or (mine is not None and theirs <= mine):
            return False
        if age is None or age >= self.settings.cache_ttl_seconds:
            return False
        async with self._lock:
            message = f"adopted the snapshot of {saved.last_sync} saved by another replica"
            self._serve_cached(saved, message)
        logger.info("tool index: %s", message)
        self.on_list_change(
            ListChanged("tools")
        )  # this replica's own live servers still win where they differ
        return True

    def _serve_cached(self, snapshot: IndexSnapshot, message: str) -> None:
        """Serve `snapshot` as a valid cache (saved, adopted or imported), every server "cached"."""
        self.index.set_snapshot(snapshot)
        status = self.index.status
        status.source, status.stale, status.message = "cache", False, message
        status.servers = {
            server_id: ServerIndexStatus("cached", len(tools), None, snapshot.last_sync)
            for server_id, tools in snapshot.servers.items()
        }

    # -- import and export ---------------------------------------------------------------------

    async def import_snapshot(self, snapshot: IndexSnapshot, origin: str) -> dict[str, Any]:
        """Replace the index with `snapshot` (e.g. `nexus index import FILE`) and save it."""
        async with self._lock:
            self._serve_cached(
                snapshot, f"imported from {origin} (snapshot of {snapshot.last_sync or 'an unknown time'})"
            )
            await self._save(snapshot)
            return self.describe()

    # -- helpers -------------------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        return self.index.describe(self.settings.cache_ttl_seconds)

    def _configured_only(self, saved: IndexSnapshot | None) -> IndexSnapshot | None:
        """A saved snapshot without the servers no longer configured (their tools cannot be called)."""
        if saved is None:
            return None
        configured = self._current().servers
        if all(server_id in configured for server_id in saved.servers):
            return saved
        kept = {server_id: tools for server_id, tools in saved.servers.items() if server_id in configured}
        return IndexSnapshot(kept, saved.last_sync, saved.format_version)

    def _admission(self) -> ToolAdmission:
        """The catalog's rules (tool_admission.py): a refused tool never enters the index either."""
        return ToolAdmission(self._upstreams().values(), self._current().gateway.name_separator)

    def _by_server(self) -> dict[str, dict[str, IndexEntry]]:
        return {
            server_id: {entry.tool_name: entry for entry in tools}
            for server_id, tools in self.index.snapshot.servers.items()
        }

    async def _load(self) -> IndexSnapshot | None:
        if self.store is None:
            return None
        try:
            return await self.store.load()
        except IndexStoreError as exc:
            logger.warning("tool index: %s; starting without it", exc)
            self.index.status.save_error = str(exc)
            return None

    async def _save(self, snapshot: IndexSnapshot) -> None:
        if self.store is None:
            return
        try:
            await self.store.save(snapshot)
        except IndexStoreError as exc:
            logger.warning("tool index: %s", exc)
            self.index.status.save_error = str(exc)
        else:
            self.index.status.save_error = None
            for listener in list(self.saved_listeners):
                try:
                    listener(snapshot.last_sync)
                except Exception:  # a listener's bug must not fail the save
                    logger.exception("tool index: a saved-listener failed")

    def _start_timer(self) -> None:
        if self._closed or (self._timer is not None and not self._timer.done()):
            return
        self._timer = asyncio.ensure_future(self._expiry_loop())

    async def _expiry_loop(self) -> None:
        """Sync again when the snapshot outlives `cache_ttl_seconds`; a stale index retries sooner."""
        while not self._closed:
            ttl = self.settings.cache_ttl_seconds
            if ttl <= 0:
                return
            if self.index.status.stale or self.index.status.source == "empty":
                delay = min(ttl, STALE_RETRY_S)  # nothing answered last time: ask again, not in a loop
            else:
                age = self.index.snapshot.age_seconds()
                delay = ttl - (age if age is not None else ttl)
            await asyncio.sleep(max(delay, 1.0))
            try:
                if await self.adopt_newer():
                    continue
                await self.sync("cache_ttl_seconds passed")
            except Exception:  # the loop must survive one failed sync
                logger.exception("tool index: periodic sync failed")

    def on_config(self, event: ConfigApplied) -> None:
        """A reload may change the TTL or tag rules: re-arm the timer and re-tag through an incremental pass."""
        old, new = event.old, event.new
        self.index.ranking = new.gateway.tool_search.ranking
        self._index_chains()  # after the gateway served the new chains (Gateway.reload)
        if old.gateway.index != new.gateway.index or old.gateway.name_separator != new.gateway.name_separator:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._settled.is_set():
                self._start_timer()
        self.on_list_change(ListChanged("tools"))

    def _index_chains(self) -> None:
        """The config's chains as entries (tagged under the rules in force); unchanged ones kept as they were."""
        previous = {entry.name: entry for entry in self.index.chains}
        entries = chain_entries(
            self._current().chains, tagger=self.tagger(), now=utc_now_iso(), previous=previous
        )
        if [e.digest for e in entries] != [e.digest for e in self.index.chains]:
            self.index.set_chains(entries)

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
