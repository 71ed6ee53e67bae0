"""What a plugin imports from Nexus (docs/PLUGINS.md): the specs it declares and what its code is given.

Kept apart from `mcp_nexus.plugins` (the loader), which config and upstream use and which
therefore must not import them back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_nexus.pipeline.step_context import StepContext
from mcp_nexus.plugins.specs import LoadedPlugin, StepSpec, TransportSpec

if TYPE_CHECKING:
    from pydantic import BaseModel

    from mcp_nexus.config.schema import ServerConfig

__all__ = ["LoadedPlugin", "StepContext", "StepSpec", "TransportSpec", "transport_settings"]


def transport_settings(config: ServerConfig) -> BaseModel | None:
    """A plugin transport's settings for one server: its `config_model` filled from the entry."""
    from mcp_nexus.config.plugin_transport import transport_settings as settings

    return settings(config)
