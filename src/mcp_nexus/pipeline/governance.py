"""Builds the governance steps (cache, rate limit, offload, size, timeout/retry) from the config.

Called once by `Gateway.__init__`; the steps run after metrics and before routing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_nexus.pipeline.call import Middleware

if TYPE_CHECKING:
    from mcp_nexus.gateway import Gateway


def governance_steps(gateway: Gateway) -> list[Middleware]:
    return []
