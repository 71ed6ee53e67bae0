"""Nexus: an intelligent gateway for the Model Context Protocol."""

__all__ = ["__version__"]

_DIST_INFO = ("mcp_nexus-", ".dist-info")


def _version_from_dist_info() -> str | None:
    """The version in the name of the installed `mcp_nexus-X.dist-info` folder, found along sys.path
    as importlib.metadata finds it, without that module's imports (a tenth of a second)."""
    import os
    import sys

    prefix, suffix = _DIST_INFO
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.startswith(prefix) and name.endswith(suffix):
                return name[len(prefix) : -len(suffix)]
    return None


def __getattr__(name: str) -> str:
    # `__version__` is looked up when first asked for: `nexus version` should not pay for it twice.
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    found = _version_from_dist_info()
    if found is None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("mcp-nexus")
        except PackageNotFoundError:  # running from a source tree without an install
            found = "0.0.0"
    globals()["__version__"] = found
    return found
