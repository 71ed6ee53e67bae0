"""The one way in-process tests run a gateway: the runtime, as `nexus serve` runs it, minus what a test does not need.

    async with running_gateway(document(...)) as gateway:           # no frontends, every server started
        await gateway.call_tool("demo.echo", {"text": "hi"})

    async with running(document(...), http=True) as runtime:         # plus the HTTP frontend
        url = runtime.url                                              # http://127.0.0.1:<free port>/mcp

A test gives what it would give `nexus serve`: a config document (a dict, as in a config
file) or an already loaded `NexusConfig`. The per-area builders (lifecycle/faults.py,
support/governance_gateway.py, xiaozhi/stack.py, ...) build those documents; they never
start anything themselves.

By default the runtime waits until every server is READY or failed (`wait_ready=True`,
what tests assert against), serves no frontend, runs no Xiaozhi bridge, watches no file
and takes no signals. Leaving the block stops every server; calls a test left running are
cut at once rather than drained for `shutdown_grace` (pass `drain=True` to test the drain).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from mcp_nexus.config.load import config_from_document
from mcp_nexus.config.schema import NexusConfig, ServerConfig
from mcp_nexus.config.watch import ConfigSource
from mcp_nexus.gateway import Gateway
from mcp_nexus.runtime import Runtime, RuntimeOptions

ConfigLike = NexusConfig | dict[str, Any]


class _LeftByTheTest(Exception):
    """Handed to the runtime's exit so that it stops at once, as on a failure, without draining."""


def load(config: ConfigLike) -> NexusConfig:
    """A config document (dict) validated the way `nexus serve` validates a file; a NexusConfig as is."""
    if isinstance(config, NexusConfig):
        return config
    loaded, _warnings = config_from_document(config)
    return loaded


@contextlib.asynccontextmanager
async def running(
    config: ConfigLike,
    *,
    wait_ready: bool = True,
    http: bool = False,
    stdio: bool = False,
    bridge: bool = False,
    source: ConfigSource | None = None,
    drain: bool = False,
) -> AsyncIterator[Runtime]:
    """A started `Runtime` (its `gateway`, and its `url` when `http`); stopped on the way out.

    `http` binds 127.0.0.1 on a free port (the config's host and port are replaced);
    `source` with a config file makes the runtime watch it, as `nexus serve` does.
    """
    loaded = load(config)
    if http:
        loaded.gateway.host = "127.0.0.1"
        loaded.gateway.port = 0  # the runtime binds first and reports the port it got
    options = RuntimeOptions(
        http=http, stdio=stdio, bridge=bridge, watch=source is not None, wait_ready=wait_ready, signals=False
    )
    runtime = Runtime(loaded, options, source=source)
    await runtime.__aenter__()
    try:
        yield runtime
    except BaseException as exc:
        await runtime.__aexit__(type(exc), exc, exc.__traceback__)
        raise
    if drain or not runtime.gateway.in_flight:
        await runtime.__aexit__(None, None, None)
    else:
        left = _LeftByTheTest()
        await runtime.__aexit__(type(left), left, None)


@contextlib.asynccontextmanager
async def running_gateway(
    config: ConfigLike, *, wait_ready: bool = True, **options: Any
) -> AsyncIterator[Gateway]:
    """The gateway of `running(...)`, for tests that talk to it directly (no frontend)."""
    async with running(config, wait_ready=wait_ready, **options) as runtime:
        yield runtime.gateway


def server_config(name: str, entry: dict[str, Any], **gateway: Any) -> ServerConfig:
    """One server's config as the gateway loads it (transport inferred, defaults filled in)."""
    loaded = load({"gateway": {"include_builtins": False, **gateway}, "servers": {name: entry}})
    return loaded.servers[name]
