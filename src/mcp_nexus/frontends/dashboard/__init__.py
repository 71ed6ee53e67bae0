"""The web dashboard served at `/` next to `/mcp` and `/api` (docs/DASHBOARD.md)."""

from mcp_nexus.frontends.dashboard.routes import Dashboard

__all__ = ["Dashboard"]
