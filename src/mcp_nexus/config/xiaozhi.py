"""Settings of the Xiaozhi endpoint bridge and the device "type: mcp" envelope (docs/XIAOZHI.md)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from mcp_nexus.config.schema_base import Strict, ToolFilter

MCP_ENDPOINT_ENV = "MCP_ENDPOINT"
"""The popular single-file bridge's variable: one endpoint URL, or several separated by `;`."""

DEVICE_PAGE_BYTES = 8000  # what devices cap a tools/list page at


_WS_SCHEMES = {"ws": "ws", "wss": "wss", "http": "ws", "https": "wss"}


def _check_ws_url(value: str, what: str) -> str:
    """The URL with an http(s) scheme turned into ws(s) (a common slip when copying it from a web page)."""
    parts = urlsplit(value.strip())
    scheme = _WS_SCHEMES.get(parts.scheme.lower())
    if scheme is None or not parts.hostname:
        # The message never repeats the value: it usually carries a token.
        raise ValueError(f"{what} must be a ws:// or wss:// URL with a host (got scheme {parts.scheme!r})")
    return parts._replace(scheme=scheme).geturl()


class Reconnect(Strict):
    """Exponential backoff between connection attempts, reset after a successful session."""

    backoff_min: float = Field(default=1.0, gt=0, description="seconds before the first retry")
    backoff_max: float = Field(
        default=60.0, gt=0, description="the ceiling; also the wait after a refused token"
    )
    backoff_jitter: float = Field(
        default=0.2, ge=0, le=1, description="up to this fraction is added at random"
    )

    @model_validator(mode="after")
    def _check_order(self) -> Reconnect:
        if self.backoff_max < self.backoff_min:
            raise ValueError(
                f"backoff_max ({self.backoff_max:g}) must not be below backoff_min ({self.backoff_min:g})"
            )
        return self


class EnvelopeServerSettings(Strict):
    """Nexus listens; peers connect as devices do and call the aggregated tools inside envelopes."""

    enabled: bool = False
    host: str = "127.0.0.1"
    port: int = Field(default=8790, ge=0, le=65535)
    path: str = "/xiaozhi/v1/"
    token: str | None = Field(default=None, repr=False, description="Authorization: Bearer value (secret)")
    hello_timeout: float = Field(default=10.0, gt=0, description="seconds a peer has to send its hello")
    idle_timeout: float = Field(
        default=120.0, gt=0, description="seconds of silence after which a channel is dead"
    )
    page_bytes: int = Field(default=DEVICE_PAGE_BYTES, ge=256, description="tools/list page cap")
    tools: ToolFilter = Field(default_factory=ToolFilter)
    profile: str | None = Field(default=None, description="the profile (config `profiles:`) its peers are in")

    @field_validator("path")
    @classmethod
    def _check_path(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError(f"'path' must start with '/', got {value!r}")
        return value

    @model_validator(mode="after")
    def _check_token(self) -> EnvelopeServerSettings:
        if self.enabled and not self.token:
            raise ValueError("the envelope server needs 'token' (peers send it as Authorization: Bearer)")
        return self


class EnvelopeClientSettings(Reconnect):
    """Nexus dials a device backend as a device would and offers it a tool set."""

    url: str | None = Field(
        default=None, repr=False, description="ws(s)://host/xiaozhi/v1/ (may hold a secret)"
    )
    token: str | None = Field(default=None, repr=False, description="sent as Authorization: Bearer (secret)")
    device_id: str = Field(
        default="nexus", min_length=1, description="the Device-Id header (a MAC on real devices)"
    )
    client_id: str = Field(
        default="nexus", min_length=1, description="the Client-Id header (a UUID on real devices)"
    )
    protocol_version: int = Field(default=1, ge=1, description="the Protocol-Version header")
    hello_timeout: float = Field(default=10.0, gt=0, description="seconds to wait for the server's hello")
    idle_timeout: float = Field(
        default=120.0, gt=0, description="seconds of silence after which a channel is dead"
    )
    page_bytes: int = Field(default=DEVICE_PAGE_BYTES, ge=256, description="tools/list page cap")
    tools: ToolFilter = Field(default_factory=ToolFilter)
    profile: str | None = Field(default=None, description="the profile (config `profiles:`) its calls are in")

    @field_validator("url")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        return None if value is None else _check_ws_url(value, "envelope_client.url")


class XiaozhiSettings(Reconnect):
    """The `xiaozhi:` section. Endpoint URLs carry their token in the query: never shown in full."""

    endpoints: list[str] = Field(
        default_factory=list,
        repr=False,
        description="wss://.../mcp/?token=... (secret), or {url: ..., profile: ...} for an endpoint in its own profile",
    )
    # Each endpoint's own profile, aligned with `endpoints` (None or missing: `profile`); filled
    # from the `{url, profile}` entries of `endpoints`.
    endpoint_profiles: list[str | None] = Field(default_factory=list)
    result_limit_bytes: int | None = Field(
        default=None,
        ge=64,
        description="max bytes of one tool result (default: gateway.result_limits.xiaozhi)",
    )
    tools: ToolFilter = Field(default_factory=ToolFilter)
    profile: str | None = Field(
        default=None, description="the profile (config `profiles:`) the endpoints' calls are in"
    )
    ping_interval: float = Field(default=25.0, gt=0, description="seconds between WebSocket pings")
    ping_timeout: float = Field(
        default=20.0, gt=0, description="seconds a pong may take before the socket is dead"
    )
    open_timeout: float = Field(default=10.0, gt=0, description="seconds the WebSocket handshake may take")
    call_timeout: float = Field(default=25.0, gt=0, lt=30, description="under the endpoint's own ~30 s")
    page_bytes: int = Field(default=DEVICE_PAGE_BYTES, ge=256, description="tools/list page cap")
    envelope_server: EnvelopeServerSettings = Field(default_factory=EnvelopeServerSettings)
    envelope_client: EnvelopeClientSettings = Field(default_factory=EnvelopeClientSettings)

    @model_validator(mode="before")
    @classmethod
    def _split_endpoint_entries(cls, data: Any) -> Any:
        """`{url, profile}` entries of `endpoints` become a URL there and a profile in `endpoint_profiles`."""
        entries = data.get("endpoints") if isinstance(data, dict) else None
        if not isinstance(entries, list) or not any(isinstance(entry, dict) for entry in entries):
            return data
        urls: list[Any] = []
        profiles: list[str | None] = []
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict):
                urls.append(entry)
                profiles.append(None)
                continue
            unknown = sorted(set(entry) - {"url", "profile"})
            if unknown:
                raise ValueError(
                    f"endpoints[{index}]: unknown key {unknown[0]!r} (an entry has url and profile)"
                )
            if not isinstance(entry.get("url"), str):
                raise ValueError(f"endpoints[{index}]: 'url' is missing (a ws:// or wss:// URL)")
            profile = entry.get("profile")
            if profile is not None and not isinstance(profile, str):
                raise ValueError(f"endpoints[{index}].profile: a profile name, got {type(profile).__name__}")
            urls.append(entry["url"])
            profiles.append(profile)
        return {**data, "endpoints": urls, "endpoint_profiles": profiles}

    @field_validator("endpoints")
    @classmethod
    def _check_endpoints(cls, value: list[str]) -> list[str]:
        return [_check_ws_url(url, f"endpoints[{index}]") for index, url in enumerate(value)]

    @model_validator(mode="after")
    def _drop_repeated_endpoints(self) -> XiaozhiSettings:
        """The same URL twice would make two sockets replace each other: the first entry stays."""
        kept: dict[str, str | None] = {}
        for index, url in enumerate(self.endpoints):
            if url not in kept:
                kept[url] = self.endpoint_profiles[index] if index < len(self.endpoint_profiles) else None
        if len(kept) != len(self.endpoints) or len(self.endpoint_profiles) > len(kept):
            self.endpoints = list(kept)
            self.endpoint_profiles = list(kept.values())
        return self

    def profile_of(self, index: int) -> str | None:
        """The profile endpoint `index`'s calls are in: its own, else `profile`."""
        own = self.endpoint_profiles[index] if index < len(self.endpoint_profiles) else None
        return own if own is not None else self.profile


def endpoints_from_env(env: Mapping[str, str] | None = None) -> list[str]:
    """The URLs in `MCP_ENDPOINT` (split on `;`, blanks dropped)."""
    raw = (os.environ if env is None else env).get(MCP_ENDPOINT_ENV, "")
    return [part.strip() for part in raw.split(";") if part.strip()]


def with_env_endpoints(
    settings: XiaozhiSettings, env: Mapping[str, str] | None = None, extra: list[str] | None = None
) -> XiaozhiSettings:
    """`settings` plus the endpoints of `MCP_ENDPOINT` and `extra` (e.g. `--endpoint`), validated, no duplicates.

    The one place where the environment joins the config: `nexus serve` and `nexus bridge` both call it.
    """
    added = [*endpoints_from_env(env), *(extra or [])]
    if not added:
        return settings
    data = settings.model_dump(exclude_unset=True)
    data["endpoints"] = [*settings.endpoints, *added]
    return XiaozhiSettings.model_validate(data)
