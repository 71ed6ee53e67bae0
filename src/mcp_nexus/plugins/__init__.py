"""Plugins by entry point: transports, pipeline steps and embedded servers (docs/PLUGINS.md).

A plugin distribution declares, in its pyproject.toml:

    [project.entry-points."mcp_nexus.transports"]
    websocket = "my_plugin.transport:WEBSOCKET"     # a TransportSpec

    [project.entry-points."mcp_nexus.steps"]
    tag = "my_plugin.step:TAG"                      # a StepSpec

    [project.entry-points."mcp_nexus.servers"]
    weather = "my_plugin.weather:create_server"     # an MCP server or a factory returning one
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_nexus.plugins.specs import LoadedPlugin, StepSpec, TransportSpec
from mcp_nexus.plugins.step_context import StepContext

if TYPE_CHECKING:
    from pydantic import BaseModel

    from mcp_nexus.config.schema import ServerConfig

__all__ = ["LoadedPlugin", "StepContext", "StepSpec", "TransportSpec", "transport_settings"]


def transport_settings(config: ServerConfig) -> BaseModel | None:
    """A plugin transport's settings for one server: its `config_model` filled from the entry."""
    from mcp_nexus.config.plugin_transport import transport_settings as settings

    return settings(config)
