"""The Xiaozhi frontend: endpoint bridge (Nexus dials out) and the device "type: mcp" envelope (docs/XIAOZHI.md)."""

from mcp_nexus.frontends.xiaozhi.bridge import XiaozhiBridge
from mcp_nexus.frontends.xiaozhi.status import render_status

__all__ = ["XiaozhiBridge", "render_status"]
