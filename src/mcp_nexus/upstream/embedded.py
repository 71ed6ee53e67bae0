"""A Python MCP server running inside the gateway (`module: package.module:attribute`)."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from contextlib import AsyncExitStack
from typing import Any

from mcp import Client, ClientSession
from mcp.server import Server
from mcp.server.mcpserver import MCPServer

from mcp_nexus.config.schema import ServerConfig
from mcp_nexus.upstream.session import Session


class EmbeddedServerError(Exception):
    """The `module:attribute` of an embedded server could not be turned into a server object."""


def load_embedded(config: ServerConfig) -> Server[Any] | MCPServer:
    assert config.module is not None
    from mcp_nexus.config.plugin_transport import server_target

    # `module` may name a server registered in `mcp_nexus.servers` (docs/PLUGINS.md)
    module_name, _, attribute = server_target(config.module).partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # an import can fail in arbitrary ways; report which module
        raise EmbeddedServerError(f"cannot import module {module_name!r}: {exc}") from exc
    try:
        target = getattr(module, attribute)
    except AttributeError as exc:
        raise EmbeddedServerError(f"module {module_name!r} has no attribute {attribute!r}") from exc
    if isinstance(target, Server | MCPServer):
        if config.options:
            raise EmbeddedServerError(
                f"{config.module} is a server object: 'options' need a factory function"
            )
        return target
    if callable(target):
        try:
            server = target(**config.options)
        except TypeError as exc:
            raise EmbeddedServerError(
                f"{config.module} rejected options {sorted(config.options)}: {exc}"
            ) from exc
        if isinstance(server, Server | MCPServer):
            return server
        raise EmbeddedServerError(f"{config.module}() returned {type(server).__name__}, not an MCP server")
    raise EmbeddedServerError(f"{config.module} is neither an MCP server nor a factory returning one")


class EmbeddedSession(Session):
    """In process: the SDK's in-memory pair (2026-07-28) or memory streams (handshake era)."""

    transport = "embedded"

    async def _send(self, request: Any, result_type: Any, timeout: float | None, progress: Any) -> Any:
        # The SDK's in-process 2026-07-28 pair does not cancel handlers when it closes: a call in
        # flight would run to its end after the server stopped. Bound each request by the
        # session's life instead, so close() ends them (and cancels the handler) at once.
        call = asyncio.ensure_future(super()._send(request, result_type, timeout, progress))
        closing = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({call, closing}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            call.cancel()  # our caller gave up (cancelled): so does the request
            raise
        finally:
            closing.cancel()
        if not call.done():
            call.cancel()
            with contextlib.suppress(BaseException):
                await call
            raise ConnectionError(f"the session to {self.config.name!r} closed during the call")
        return call.result()

    async def _connect(self, stack: AsyncExitStack) -> ClientSession:
        # The SDK's Client owns in-process wiring (it alone may reach an MCPServer's inner Server).
        mode = "auto" if self.era == "latest" else "legacy"  # the SDK's names for the two policies
        client = Client(load_embedded(self.config), mode=mode, cache=None, **self.callbacks())
        await stack.enter_async_context(client)
        return client.session
