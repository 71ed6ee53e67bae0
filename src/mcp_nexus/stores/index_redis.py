"""The tool index in Redis (`stores.index: redis://...`): one snapshot that every replica shares.

The whole snapshot is one JSON document (the design's cache-file format, index_snapshot.py)
under `<prefix>:index:snapshot`, its time beside it under `<prefix>:index:last_sync`; both are
written in one MULTI, so a reader never sees a snapshot with another snapshot's time. A
replica that syncs saves it here; a replica that starts loads it (and, while it is younger
than `cache_ttl_seconds`, serves it without asking the servers again); a running replica whose
own snapshot expires adopts a newer one found here instead of syncing (index_sync.py).
"""

from __future__ import annotations

import json
from typing import Any

from mcp_nexus.catalog.index_snapshot import IndexFormatError, IndexSnapshot
from mcp_nexus.catalog.index_store import IndexStoreError
from mcp_nexus.config.secrets import mask_url
from mcp_nexus.stores.redis_link import RedisLink, RedisUnavailableError


class RedisIndexStore:
    def __init__(self, link: RedisLink, *, prefix: str) -> None:
        self.link = link
        self.snapshot_key = f"{prefix}:index:snapshot"
        self.last_sync_key = f"{prefix}:index:last_sync"

    @property
    def location(self) -> str:
        return f"{mask_url(self.link.url)} key {self.snapshot_key}"

    async def load(self) -> IndexSnapshot | None:
        try:
            raw = await self.link.run(lambda client: client.get(self.snapshot_key))
        except RedisUnavailableError as exc:
            raise IndexStoreError(f"cannot read the tool index from {self.location}: {exc}") from exc
        if raw is None:
            return None
        try:
            return IndexSnapshot.from_document(json.loads(raw), skip_bad_entries=True)
        except (ValueError, IndexFormatError) as exc:
            raise IndexStoreError(f"cannot read the tool index {self.location}: {exc}") from exc

    async def save(self, snapshot: IndexSnapshot) -> None:
        document = json.dumps(snapshot.to_document(), ensure_ascii=False)

        async def write(client: Any) -> None:
            async with client.pipeline(transaction=True) as pipe:
                pipe.set(self.snapshot_key, document)
                pipe.set(self.last_sync_key, snapshot.last_sync or "")
                await pipe.execute()

        try:
            await self.link.run(write)
        except RedisUnavailableError as exc:
            raise IndexStoreError(f"cannot save the tool index to {self.location}: {exc}") from exc

    async def last_sync(self) -> str | None:
        """The shared snapshot's time without reading the snapshot (None: nothing saved)."""
        try:
            raw = await self.link.run(lambda client: client.get(self.last_sync_key))
        except RedisUnavailableError as exc:
            raise IndexStoreError(f"cannot read the tool index from {self.location}: {exc}") from exc
        return raw.decode() if isinstance(raw, bytes) else raw
