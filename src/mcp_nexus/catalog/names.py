"""How upstream names become the names clients see."""

from __future__ import annotations

from fnmatch import fnmatchcase

from mcp_nexus.config.schema import ToolFilter


def exposed_name(namespace: str, name: str, separator: str = ".") -> str:
    """`<namespace><sep><name>`, or the bare name when the namespace is empty."""
    return f"{namespace}{separator}{name}" if namespace else name


def is_allowed(name: str, rules: ToolFilter) -> bool:
    """Allow-list (None = all) minus deny-list; both take fnmatch patterns."""
    if rules.allow is not None and not any(fnmatchcase(name, pattern) for pattern in rules.allow):
        return False
    return not any(fnmatchcase(name, pattern) for pattern in rules.deny)
