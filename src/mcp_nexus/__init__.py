"""Nexus: an intelligent gateway for the Model Context Protocol."""

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    # `__version__` is looked up when first asked for: importlib.metadata costs the `nexus`
    # command a long moment at start on a busy machine, before it can answer Ctrl-C.
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("mcp-nexus")
    except PackageNotFoundError:  # running from a source tree without an install
        found = "0.0.0"
    globals()["__version__"] = found
    return found
