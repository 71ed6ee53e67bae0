"""Nexus's own plugins, as its pyproject.toml declares them (`[project.entry-points]`).

The registry reads them from the installed metadata like any plugin's. This table is the same
list, for one case only: an install whose metadata predates these entry points (an editable
install made before they were added). tests/plugins checks the two never differ.
"""

from __future__ import annotations

TRANSPORTS_GROUP = "mcp_nexus.transports"
STEPS_GROUP = "mcp_nexus.steps"
SERVERS_GROUP = "mcp_nexus.servers"
GROUPS = (TRANSPORTS_GROUP, STEPS_GROUP, SERVERS_GROUP)

DISTRIBUTION = "mcp-nexus"

BUILTIN_ENTRY_POINTS: dict[str, dict[str, str]] = {
    TRANSPORTS_GROUP: {
        "stdio": "mcp_nexus.upstream.transports:STDIO",
        "http": "mcp_nexus.upstream.transports:HTTP",
        "sse": "mcp_nexus.upstream.transports:SSE",
        "embedded": "mcp_nexus.upstream.transports:EMBEDDED",
    },
    STEPS_GROUP: {
        "errors": "mcp_nexus.pipeline.steps.builtin:ERRORS",
        "size_limit": "mcp_nexus.pipeline.steps.builtin:SIZE_LIMIT",
        "cache": "mcp_nexus.pipeline.steps.builtin:CACHE",
        "validate": "mcp_nexus.pipeline.steps.builtin:VALIDATE",
        "rate_limit": "mcp_nexus.pipeline.steps.builtin:RATE_LIMIT",
        "offload": "mcp_nexus.pipeline.steps.builtin:OFFLOAD",
        "retry": "mcp_nexus.pipeline.steps.builtin:RETRY",
        "timeout": "mcp_nexus.pipeline.steps.builtin:TIMEOUT",
        "redact": "mcp_nexus.pipeline.steps.redact:REDACT",
    },
    SERVERS_GROUP: {
        "device": "mcp_nexus.builtin.device.server:create_server",
        "cortex": "mcp_nexus.builtin.cortex.server:create_server",
    },
}

BUILTIN_TRANSPORTS = tuple(BUILTIN_ENTRY_POINTS[TRANSPORTS_GROUP])
"""Checked by `ServerConfig` itself without loading any plugin (validating a config stays fast)."""
