"""The built-in device server: system information, volume and brightness of the host."""

from mcp_nexus.builtin.device.backends import DeviceBackends, detect_backends
from mcp_nexus.builtin.device.server import create_server

__all__ = ["DeviceBackends", "create_server", "detect_backends"]
