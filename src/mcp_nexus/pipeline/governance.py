"""The governance steps, built from settings, in the order every call goes through them.

    tools:    metrics -> errors -> size limit -> cache -> validate -> rate limit -> offload -> retry -> timeout -> route
    requests: metrics -> errors -> timeout -> route          (resources/read, prompts/get, completion/complete)

Each step is registered like a plugin's (pipeline/steps/builtin.py, pyproject.toml's
`mcp_nexus.steps`); an installed plugin's step, and the built-in `redact` when a config turns it
on, take the place they declare (plugins/step_order.py, docs/PLUGINS.md).

Why this order (docs/GOVERNANCE.md):
- errors is outermost so whatever fails below leaves classified, with one data shape;
- size limit sits outside the cache: the cache is shared by all frontends, limits are per frontend;
- cache before rate limit: hits (and calls merged into one in flight) never count;
- validate before rate limit: a malformed call spends no quota and never reaches a server;
- offload inside the cache: the cache keeps the small alert, not the large payload;
- retry outside timeout: every attempt gets the full timeout.

Like Starlette's `build_middleware_stack`, each step gets its settings (or a way to read the
current ones), never the gateway: nothing here imports or calls back into it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_nexus.catalog.catalog import Catalog
from mcp_nexus.catalog.local_tools import LocalTool
from mcp_nexus.config.config_applied import ConfigApplied
from mcp_nexus.config.schema import NexusConfig
from mcp_nexus.events import ServerStateChanged
from mcp_nexus.pipeline.call import Middleware
from mcp_nexus.pipeline.offload_folder import OffloadFolder, default_offload_dir
from mcp_nexus.pipeline.policy import PolicyResolver
from mcp_nexus.pipeline.sandbox_tool import sandbox_tool
from mcp_nexus.pipeline.step_context import StepContext
from mcp_nexus.pipeline.steps.cache import CacheStep, decode_stored, encode_stored
from mcp_nexus.pipeline.steps.offload import Offloader
from mcp_nexus.pipeline.steps.ratelimit import RateLimitStep
from mcp_nexus.pipeline.steps.retry import RetryStep
from mcp_nexus.pipeline.steps.size_limit import SizeLimitStep
from mcp_nexus.pipeline.tool_config_check import ToolConfigChecker
from mcp_nexus.plugins.registry import registry
from mcp_nexus.plugins.step_order import order_steps
from mcp_nexus.sandbox import ResourceLimits, Sandbox
from mcp_nexus.stores.shared import Stores
from mcp_nexus.upstream.upstream import Upstream

logger = logging.getLogger(__name__)


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


@dataclass
class Governance:
    """The live governance parts of one gateway, for the gateway, admin endpoints, the CLI and tests."""

    policies: PolicyResolver
    cache: CacheStep
    rate_limit: RateLimitStep
    offloader: Offloader | None
    sandbox: Sandbox | None
    checker: ToolConfigChecker
    size_limit: SizeLimitStep
    retry: RetryStep
    tool_steps: list[Middleware]
    request_steps: list[Middleware]
    local_tools: list[LocalTool]
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set)

    @classmethod
    def build(
        cls,
        config: NexusConfig,
        catalog: Catalog,
        current: Callable[[], NexusConfig],
        upstreams: Mapping[str, Upstream],
        stores: Stores | None = None,
    ) -> Governance:
        """`current` returns the config in force (it changes on reload); `config` is the one to start with.

        `stores` says where the cache and the rate-limit windows live (memory when not given).
        The steps are the registry's (pyproject.toml's `mcp_nexus.steps`: the built-ins and any
        installed plugin's), each built from a `StepContext` and placed by `order_steps`."""
        settings = config.gateway
        stores = stores or Stores(config.stores)
        policies = PolicyResolver(catalog, lambda: current().gateway)
        store = stores.cache(
            max_entries=settings.cache_max_entries,
            max_bytes=settings.cache_max_bytes,
            encode=encode_stored,
            decode=decode_stored,
        )
        offloader: Offloader | None = None
        sandbox: Sandbox | None = None
        local_tools: list[LocalTool] = []
        if offload_enabled(config):
            path = Path(settings.offload_dir).expanduser() if settings.offload_dir else default_offload_dir()
            folder = OffloadFolder(
                path, max_age=settings.offload_max_age, max_bytes=settings.offload_max_bytes
            )
            offloader = Offloader(folder)
            sandbox = Sandbox(
                path,
                allow_unsandboxed=settings.allow_unsandboxed,
                timeout_s=settings.sandbox_timeout,
                max_concurrent=settings.sandbox_concurrency,
                output_cap_bytes=settings.sandbox_output_bytes,
                limits=ResourceLimits(memory_bytes=settings.sandbox_memory),
            )
            local_tools.append(sandbox_tool(sandbox, folder))
        context = StepContext(config, current, catalog, policies, upstreams, stores, store, offloader)
        tool_steps, request_steps = _built_steps(context)
        built = context.built
        return cls(
            policies,
            built["cache"],
            built["rate_limit"],
            offloader,
            sandbox,
            ToolConfigChecker(),
            built["size_limit"],
            built["retry"],
            tool_steps,
            request_steps,
            local_tools,
        )

    def on_upstream_state(self, event: ServerStateChanged) -> None:
        """Any state change (restart, crash, stop) invalidates that server's cached results."""
        upstream = event.upstream
        self.checker.check(upstream)
        self._spawn(self.cache.clear_server(upstream.name))

    def on_config(self, event: ConfigApplied) -> None:
        """A reload: servers whose entry changed lose their cached results; gateway settings apply live."""
        old, new = event.old, event.new
        if old.gateway != new.gateway:  # a reload always builds new objects: compare values
            settings = new.gateway
            self.rate_limit.caller_limit = settings.caller_rate_limit
            self.retry.backoff = settings.retry_backoff
            self._spawn(self.cache.clear())  # global defaults (TTLs, thresholds) may have changed
            return
        for name, server in old.servers.items():
            if new.servers.get(name) is not server:
                self._spawn(self.cache.clear_server(name))

    def _spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            work.close()
            return
        task = loop.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def _built_steps(context: StepContext) -> tuple[list[Middleware], list[Middleware]]:
    """Every registered step that its `build` keeps, in chain order: (tools chain, requests chain).

    A plugin's step that cannot be placed or built is logged by name and left out; a built-in's
    failure is a bug and propagates."""
    ordered, problems = order_steps(registry().steps())
    for name, problem in problems.items():
        logger.warning("step %r left out: %s", name, problem)
    tools: list[Middleware] = []
    requests: list[Middleware] = []
    for spec in ordered:
        try:
            step = spec.build(context)
        except Exception as exc:
            if spec.order is not None:
                raise
            logger.warning("step %r left out: its build failed: %s: %s", spec.name, type(exc).__name__, exc)
            continue
        if step is None:
            continue
        context.built[spec.name] = step
        if "tools" in spec.chains:
            tools.append(step)
        if "requests" in spec.chains:
            requests.append(step)
    return tools, requests


def memoised_limits(current: Callable[[], NexusConfig]) -> Callable[[], Mapping[str, int]]:
    """The per-frontend limits of the config in force, recomputed only when the config object changes."""
    memo: list[Any] = [None, {}]

    def limits() -> Mapping[str, int]:
        config = current()
        if memo[0] is not config:
            memo[0], memo[1] = config, config.result_limits()
        return memo[1]  # type: ignore[no-any-return]

    return limits
