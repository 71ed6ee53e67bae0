"""Nexus: an intelligent gateway for the Model Context Protocol."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("mcp-nexus")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0"

__all__ = ["__version__"]
