"""The `stores:` section: where each kind of shared state lives (memory, or Redis for several replicas).

    stores:
      default: redis://127.0.0.1:6379/0   # every kind not named below; "memory" (the default) needs nothing
      cache: memory                       # a kind may differ from the default
      key_prefix: nexus                   # several deployments can share one Redis

Each kind is chosen once, at start (a reload does not move state between stores). Kinds:
`cache` (tool results), `limits` (rate-limit windows), `events` (list_changed between
replicas), `index` (the tool-index snapshot; "memory" keeps the local file of
`gateway.index.path`), `tasks` (the control plane's task queue; "memory" keeps the local
sqlite file of `control.queue_path`), `pins` (tool-integrity pins and approvals; "memory"
keeps the pin file of the data folder), `oauth` (logins to OAuth-protected upstream servers;
"memory" keeps the data folder's encrypted files; Redis needs `$NEXUS_OAUTH_KEY`). A new kind is one field here and one branch in
`stores/shared.py`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from mcp_nexus.config.schema_base import Strict

StoreKind = Literal["cache", "limits", "events", "index", "tasks", "pins", "oauth"]
KINDS: tuple[StoreKind, ...] = (
    "cache",
    "limits",
    "events",
    "index",
    "tasks",
    "pins",
    "oauth",
)  # a new kind: here, a field below, stores/shared.py
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def _check_store_url(value: str | None, field: str) -> str | None:
    if value is None or value == "memory" or value.startswith(REDIS_SCHEMES):
        return value
    raise ValueError(
        f"stores.{field} must be 'memory' or a Redis URL (redis://host:port/db, rediss://..., unix://...)"
    )


class StoresSettings(Strict):
    """Where shared state lives; `memory` keeps the single-process default that needs no setup."""

    default: str = Field(default="memory", description="'memory' or a redis:// URL, for every kind not set")
    cache: str | None = Field(default=None, description="tool results; None = `default`")
    limits: str | None = Field(default=None, description="rate-limit windows; None = `default`")
    events: str | None = Field(default=None, description="list_changed fan-out; None = `default`")
    index: str | None = Field(
        default=None, description="tool-index snapshot; None = `default`; memory = gateway.index.path"
    )
    tasks: str | None = Field(
        default=None, description="control-plane task queue; None = `default`; memory = control.queue_path"
    )
    pins: str | None = Field(
        default=None,
        description="tool-integrity pins and approvals; None = `default`; memory = the data folder's pin file",
    )
    oauth: str | None = Field(
        default=None,
        description=(
            "OAuth logins to upstream servers; None = `default`; memory = the data folder's encrypted "
            "files; Redis needs $NEXUS_OAUTH_KEY, the same on every replica (docs/OAUTH.md)"
        ),
    )
    key_prefix: str = Field(
        default="nexus", min_length=1, description="prefix of every Redis key and channel"
    )
    timeout: float = Field(
        default=0.5, gt=0, description="seconds one Redis operation may take before the call goes local"
    )
    retry_after: float = Field(
        default=2.0, gt=0, description="seconds a Redis found down is left alone before it is tried again"
    )
    cache_lock_ttl: float = Field(
        default=10.0,
        gt=0,
        description="seconds one replica may hold a result's single-flight lock (the others wait for its answer)",
    )
    task_lease: float = Field(
        default=15.0,
        ge=1.0,
        description=(
            "seconds a replica's claim on a running task lasts without a heartbeat (renewed every third "
            "of it); a replica that dies leaves its task to another this long after its last heartbeat"
        ),
    )

    @field_validator("default")
    @classmethod
    def _check_default(cls, value: str) -> str:
        _check_store_url(value, "default")
        return value

    @field_validator(*KINDS)
    @classmethod
    def _check_kind(cls, value: str | None, info: object) -> str | None:
        return _check_store_url(value, getattr(info, "field_name", "kind"))

    def url_for(self, kind: StoreKind) -> str:
        """'memory' or the Redis URL that holds `kind`."""
        chosen: str | None = getattr(self, kind)
        return chosen if chosen is not None else self.default

    def redis_urls(self) -> list[str]:
        """Every distinct Redis URL in use (its password is a secret: see config/secrets.py)."""
        return sorted({url for kind in KINDS if (url := self.url_for(kind)) != "memory"})
