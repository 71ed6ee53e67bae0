"""Turn a server's config into what `mcp.Client` connects to, one branch per transport."""

from __future__ import annotations

import importlib
import os
from typing import Any

import httpx2
from mcp import StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp.server.mcpserver import MCPServer

from mcp_nexus.config.schema import ServerConfig
from mcp_nexus.upstream.stderr_log import StderrForwarder

# What a stdio child needs from our environment besides what the config gives it: enough to
# find interpreters (PATH), write caches (HOME) and decode text (LANG), never our secrets.
_INHERITED_ENV = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TERM",
    "TMPDIR",
    "USER",
    "SHELL",
    "NODE_PATH",
    "VIRTUAL_ENV",
)


class EmbeddedServerError(Exception):
    """The `module:attribute` of an embedded server could not be turned into a server object."""


def load_embedded(config: ServerConfig) -> Server[Any] | MCPServer:
    assert config.module is not None
    module_name, _, attribute = config.module.partition(":")
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


def child_environment(config: ServerConfig) -> dict[str, str]:
    env = {key: os.environ[key] for key in _INHERITED_ENV if key in os.environ}
    env.update(config.env)
    return env


def stdio_target(config: ServerConfig, stderr: StderrForwarder) -> Any:
    assert config.command is not None
    params = StdioServerParameters(
        command=config.command, args=config.args, env=child_environment(config), cwd=config.cwd
    )
    return stdio_client(params, errlog=stderr.writer)


def http_headers(config: ServerConfig) -> dict[str, str]:
    headers = dict(config.headers)
    if config.api_key and not any(k.lower() == "authorization" for k in headers):
        headers["Authorization"] = f"Bearer {config.api_key}"
    return headers


def http_target(config: ServerConfig) -> Any:
    assert config.url is not None
    timeout = httpx2.Timeout(
        config.timeouts.call, connect=config.timeouts.connect, read=config.timeouts.sse_read
    )
    client = httpx2.AsyncClient(headers=http_headers(config), timeout=timeout, follow_redirects=False)
    return streamable_http_client(config.url, http_client=client), client


def sse_target(config: ServerConfig) -> Any:
    assert config.url is not None
    return sse_client(
        config.url,
        headers=http_headers(config),
        timeout=config.timeouts.connect,
        sse_read_timeout=config.timeouts.sse_read,
    )
