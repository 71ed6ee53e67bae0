"""`profiles:` named views of the catalog (virtual servers), each bound to identities (docs/IDENTITY.md).

    profiles:
      eng:
        servers: [git]                 # every tool, resource and prompt of these servers
        tools: ["fetch", "tag:search"] # exposed names, fnmatch globs, or tag:<tag>
        exclude: ["git.git_reset*"]    # taken out again
        bind: {groups: [eng]}          # token callers this profile is for
        tool_search: "on"
      kiosk:
        tools: ["weather.*"]

A caller's profile is the one its way in names (`/mcp/<profile>`, `nexus serve --stdio
--profile`, a Xiaozhi endpoint's or the envelope server's `profile`), else the first profile
(in file order) whose `bind` matches its access token, else the profile named `default`.
What that means for a caller matched by none is said in profiles/resolve.py.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from mcp_nexus.config.schema_base import Strict

PROFILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
DEFAULT_PROFILE = "default"
TAG_PREFIX = "tag:"


class ProfileBinding(Strict):
    """Which token callers a profile is for: any one match binds (an empty binding binds nobody)."""

    users: list[str] = Field(default_factory=list, description="the token's `sub`")
    groups: list[str] = Field(default_factory=list, description="names in the token's groups claim")
    scopes: list[str] = Field(default_factory=list, description="a scope the token carries")
    clients: list[str] = Field(default_factory=list, description="the token's client id")

    @property
    def empty(self) -> bool:
        return not (self.users or self.groups or self.scopes or self.clients)


class ProfileConfig(Strict):
    """One named view: what its callers see and may call; everything else does not exist for them."""

    description: str | None = None
    servers: list[str] = Field(
        default_factory=list, description="servers whose tools, resources and prompts are all in the view"
    )
    tools: list[str] = Field(
        default_factory=list,
        description="exposed tool names or fnmatch globs (git.*), or tag:<tag> (the tool index's tags)",
    )
    exclude: list[str] = Field(
        default_factory=list, description="tool names, globs or tag:<tag> taken out of what the rest lets in"
    )
    resources: list[str] = Field(
        default_factory=list, description="resource URIs or globs (besides those of `servers`)"
    )
    prompts: list[str] = Field(
        default_factory=list, description="exposed prompt names or globs (besides those of `servers`)"
    )
    tool_search: Literal["on", "off", "auto"] | None = Field(
        default=None, description="search mode for this profile's callers; unset: gateway.tool_search's"
    )
    bind: ProfileBinding = Field(default_factory=ProfileBinding)

    @field_validator("tools", "exclude", "resources", "prompts", "servers")
    @classmethod
    def _no_blank(cls, value: list[str]) -> list[str]:
        for item in value:
            if not item.strip():
                raise ValueError("an entry is empty")
            if item.startswith(TAG_PREFIX) and not item[len(TAG_PREFIX) :].strip():
                raise ValueError(f"{item!r} names no tag")
        return value


def check_named_profiles(profiles: dict[str, ProfileConfig], named: dict[str, str | None]) -> None:
    """Every profile a way in names (`xiaozhi.profile`, ...: `named` by where) is configured."""
    for where, name in named.items():
        if name is not None and name not in profiles:
            known = ", ".join(sorted(profiles)) or "none are configured"
            raise ValueError(f"{where}: no profile {name!r} (profiles: {known})")


def check_profiles(profiles: dict[str, ProfileConfig]) -> dict[str, ProfileConfig]:
    """Names usable as a URL path segment (`/mcp/<profile>`)."""
    for name in profiles:
        if not PROFILE_NAME.fullmatch(name):
            raise ValueError(
                f"profile name {name!r}: use letters, digits, '_' and '-' (up to 64, not starting with '_' or '-')"
            )
    return profiles
