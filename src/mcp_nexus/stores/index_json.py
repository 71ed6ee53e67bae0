"""The tool index as the controller design's JSON cache file (written whole, then renamed into place)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from mcp_nexus.catalog.index_snapshot import IndexFormatError, IndexSnapshot
from mcp_nexus.catalog.index_store import IndexStoreError


class JsonIndexStore:
    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def location(self) -> str:
        return str(self.path)

    async def load(self) -> IndexSnapshot | None:
        if not self.path.exists():
            return None
        return await asyncio.to_thread(self._load)

    async def save(self, snapshot: IndexSnapshot) -> None:
        await asyncio.to_thread(self._save, snapshot)

    def _load(self) -> IndexSnapshot:
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
            return IndexSnapshot.from_document(doc, skip_bad_entries=True)
        except (OSError, ValueError, IndexFormatError) as exc:
            raise IndexStoreError(f"cannot read the tool index {self.path}: {exc}") from exc

    def _save(self, snapshot: IndexSnapshot) -> None:
        temporary = self.path.with_name(self.path.name + ".tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            temporary.write_text(
                json.dumps(snapshot.to_document(), ensure_ascii=False, indent=1), encoding="utf-8"
            )
            os.chmod(temporary, 0o600)
            temporary.replace(self.path)
        except OSError as exc:
            raise IndexStoreError(f"cannot save the tool index to {self.path}: {exc}") from exc
