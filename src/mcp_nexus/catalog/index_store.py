"""The port the tool index is saved through (catalog side); stores/ implements it: sqlite, the design's JSON file, Redis (index_location.py, stores/shared.py)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from mcp_nexus.catalog.index_snapshot import IndexSnapshot


class IndexStoreError(Exception):
    """The saved index cannot be read or written; says which file and why."""


@runtime_checkable
class IndexStore(Protocol):
    @property
    def location(self) -> str:
        """What to show an operator: the file's path."""
        ...

    async def load(self) -> IndexSnapshot | None:
        """The saved snapshot, None when nothing was saved yet; raises IndexStoreError when unreadable."""
        ...

    async def save(self, snapshot: IndexSnapshot) -> None:
        """Replace what is saved, all at once; raises IndexStoreError."""
        ...
