"""The plugin loader: entry points for transports, pipeline steps and embedded servers.

Plugin code imports what it needs from `mcp_nexus.plugin_api` (docs/PLUGINS.md).

Plugins by entry point: transports, pipeline steps and embedded servers (docs/PLUGINS.md).

A plugin distribution declares, in its pyproject.toml:

    [project.entry-points."mcp_nexus.transports"]
    websocket = "my_plugin.transport:WEBSOCKET"     # a TransportSpec

    [project.entry-points."mcp_nexus.steps"]
    tag = "my_plugin.step:TAG"                      # a StepSpec

    [project.entry-points."mcp_nexus.servers"]
    weather = "my_plugin.weather:create_server"     # an MCP server or a factory returning one
"""
