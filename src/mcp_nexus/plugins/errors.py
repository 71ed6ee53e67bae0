"""What can go wrong with a plugin: the registry reports these by plugin name and runs without it."""

from __future__ import annotations


class PluginError(Exception):
    """A plugin could not be imported, or what it declares is not what its group expects."""


class UnknownPluginError(PluginError):
    """A name no installed plugin (nor a built-in) of that group declares."""
