"""A Nexus plugin: the `websocket` transport, the `call_tag` step and the `plugin_echo` server."""
