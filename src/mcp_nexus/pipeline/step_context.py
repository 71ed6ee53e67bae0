"""What a step's `build` gets: the gateway's shared parts, never the gateway itself."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_nexus.catalog.catalog import Catalog
    from mcp_nexus.config.schema import NexusConfig
    from mcp_nexus.pipeline.policy import PolicyResolver
    from mcp_nexus.pipeline.steps.offload import Offloader
    from mcp_nexus.stores.cache_store import CacheStore
    from mcp_nexus.stores.shared import Stores
    from mcp_nexus.upstream.upstream import Upstream


@dataclass
class StepContext:
    """The config to start with, a way to read the one in force (it changes on reload), and the
    parts several steps share. `built` holds the steps made so far, by name (outermost first)."""

    config: NexusConfig
    current: Callable[[], NexusConfig]
    catalog: Catalog
    policies: PolicyResolver
    upstreams: Mapping[str, Upstream]
    stores: Stores
    store: CacheStore
    offloader: Offloader | None
    built: dict[str, Any] = field(default_factory=dict)
