"""Builds the governance steps from the config, in the order every call goes through them.

    metrics -> errors -> size limit -> cache -> validate -> rate limit -> offload -> retry -> timeout -> route

Why this order (docs/GOVERNANCE.md):
- errors is outermost so whatever fails below leaves classified, with one data shape;
- size limit sits outside the cache: the cache is shared by all frontends, limits are per frontend;
- cache before rate limit: hits (and calls merged into one in flight) never count;
- validate before rate limit: a malformed call spends no quota and never reaches a server;
- offload inside the cache: the cache keeps the small alert, not the large payload;
- retry outside timeout: every attempt gets the full timeout.
Called once by `Gateway.__init__`.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mcp_types as types

from mcp_nexus.config.schema import NexusConfig
from mcp_nexus.pipeline.cache import CacheStep
from mcp_nexus.pipeline.call import Middleware
from mcp_nexus.pipeline.classify import ErrorStep
from mcp_nexus.pipeline.offload import Offloader, OffloadStep, offloaded_file
from mcp_nexus.pipeline.offload_folder import OffloadFolder, default_offload_dir
from mcp_nexus.pipeline.policy import PolicyResolver
from mcp_nexus.pipeline.ratelimit import RateLimitStep
from mcp_nexus.pipeline.retry import RetryStep
from mcp_nexus.pipeline.sandbox_tool import sandbox_tool
from mcp_nexus.pipeline.size_limit import DEFAULT_RESULT_LIMITS, SizeLimitStep
from mcp_nexus.pipeline.timeout import TimeoutStep
from mcp_nexus.pipeline.tool_config_check import ToolConfigChecker
from mcp_nexus.pipeline.validate import ValidateStep
from mcp_nexus.sandbox import Sandbox
from mcp_nexus.stores.memory_cache import MemoryCacheStore

if TYPE_CHECKING:
    from mcp_nexus.gateway import Gateway
    from mcp_nexus.upstream.upstream import Upstream

logger = logging.getLogger(__name__)


@dataclass
class Governance:
    """The live governance parts of one gateway, for admin endpoints, the CLI and tests."""

    policies: PolicyResolver
    cache: CacheStep
    rate_limit: RateLimitStep
    offloader: Offloader | None
    sandbox: Sandbox | None
    checker: ToolConfigChecker
    size_limit: SizeLimitStep
    retry: RetryStep
    steps: list[Middleware]
    attached: bool = False  # listening to upstream state changes
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set)

    def on_upstream_state(self, upstream: Upstream) -> None:
        """Any state change (restart, crash, stop) invalidates that server's cached results."""
        self.checker.check(upstream)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._spawn(loop, self.cache.clear_server(upstream.name))

    def on_config(self, old: NexusConfig, new: NexusConfig) -> None:
        """A reload: servers whose entry changed lose their cached results; gateway settings apply live."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if old.gateway != new.gateway:  # a reload always builds new objects: compare values
            settings = new.gateway
            self.size_limit.limits = {**DEFAULT_RESULT_LIMITS, **settings.result_limits}
            self.rate_limit.caller_limit = settings.caller_rate_limit
            self.retry.backoff = settings.retry_backoff
            self._spawn(loop, self.cache.clear())  # global defaults (TTLs, thresholds) may have changed
            return
        for name, server in old.servers.items():
            if new.servers.get(name) is not server:
                self._spawn(loop, self.cache.clear_server(name))

    def _spawn(self, loop: asyncio.AbstractEventLoop, work: Coroutine[Any, Any, Any]) -> None:
        task = loop.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


_GOVERNANCE: weakref.WeakKeyDictionary[Gateway, Governance] = weakref.WeakKeyDictionary()


def governance_of(gateway: Gateway) -> Governance:
    """The governance built for `gateway` (KeyError if it was built without `governance_steps`)."""
    return _GOVERNANCE[gateway]


def offload_enabled(config: NexusConfig) -> bool:
    """True when any level turns offload on (the gateway's default threshold is 5120 bytes)."""
    settings = config.gateway
    if "offload_threshold" not in settings.model_fields_set or settings.offload_threshold is not None:
        return True
    for server in config.servers.values():
        levels = [server, *server.tool_config.values()]
        if any(
            "offload_threshold" in lv.model_fields_set and lv.offload_threshold is not None for lv in levels
        ):
            return True
    return False


def governance_steps(gateway: Gateway) -> list[Middleware]:
    settings = gateway.config.gateway
    policies = PolicyResolver(gateway.catalog, lambda: gateway.config.gateway)
    store = MemoryCacheStore(max_entries=settings.cache_max_entries, max_bytes=settings.cache_max_bytes)
    offloader: Offloader | None = None
    sandbox: Sandbox | None = None
    if offload_enabled(gateway.config):
        path = Path(settings.offload_dir).expanduser() if settings.offload_dir else default_offload_dir()
        folder = OffloadFolder(path, max_age=settings.offload_max_age, max_bytes=settings.offload_max_bytes)
        offloader = Offloader(folder)
        sandbox = Sandbox(
            path,
            allow_unsandboxed=settings.allow_unsandboxed,
            timeout_s=settings.sandbox_timeout,
            max_concurrent=settings.sandbox_concurrency,
        )
        gateway.add_local_tool(sandbox_tool(sandbox, folder))

    def still_valid(result: types.CallToolResult) -> bool:
        name = offloaded_file(result)
        return name is None or (offloader is not None and offloader.folder.exists(name))

    cache = CacheStep(policies, store, still_valid=still_valid, upstreams=gateway.upstreams)
    rate_limit = RateLimitStep(policies, caller_limit=settings.caller_rate_limit)
    size_limit = SizeLimitStep(policies, offloader, settings.result_limits)
    retry = RetryStep(policies, backoff=settings.retry_backoff)
    steps: list[Middleware] = [
        ErrorStep(),
        size_limit,
        cache,
        ValidateStep(gateway.catalog),
        rate_limit,
    ]
    if offloader is not None:
        steps.append(OffloadStep(policies, offloader))
    steps += [retry, TimeoutStep(policies)]
    governance = Governance(
        policies, cache, rate_limit, offloader, sandbox, ToolConfigChecker(), size_limit, retry, steps
    )
    _GOVERNANCE[gateway] = governance
    gateway.add_state_listener(governance.on_upstream_state)
    gateway.add_config_listener(governance.on_config)
    return steps
