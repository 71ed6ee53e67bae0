"""`profiles:` named views of the catalog (virtual servers), each bound to identities (docs/IDENTITY.md).

    profiles:
      eng:
        servers: [git]                 # every tool, resource and prompt of these servers
        tools: ["fetch", "tag:search"] # exposed names, fnmatch globs, or tag:<tag>
        exclude: ["git.git_reset*"]    # taken out again
        bind: {groups: [eng]}          # token callers this profile is for
        tool_search: "on"
        tool_config:                   # policy overrides for its callers, by exposed name or glob
          git.git_log: {cache_ttl: 60, rate_limit: "10/minute"}
      kiosk:
        tools: ["weather.*"]

A caller's profile is the one its way in names (`/mcp/<profile>`, `nexus serve --stdio
--profile`, a Xiaozhi endpoint's or the envelope server's `profile`), else the first profile
(in file order) whose `bind` matches its access token, else the profile named `default`.
What that means for a caller matched by none is said in profiles/resolve.py.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator

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
    tool_config: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="policy overrides for this profile's callers, by exposed tool name or glob: "
        "a server tool_config entry's keys (cache_ttl, rate_limit, timeout, offload_threshold, ...)",
    )

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


# The tool index's traits are the same for every caller: set in the server's tool_config only.
NOT_PER_PROFILE = ("cost", "blocking")


def check_profiles(
    profiles: dict[str, ProfileConfig], policy_model: type[BaseModel] | None = None
) -> dict[str, ProfileConfig]:
    """Names usable as a URL path segment (`/mcp/<profile>`); each `tool_config` entry a valid
    `policy_model` (CallPolicy, passed in: schema.py imports this module)."""
    for name, profile in profiles.items():
        if not PROFILE_NAME.fullmatch(name):
            raise ValueError(
                f"profile name {name!r}: use letters, digits, '_' and '-' (up to 64, not starting with '_' or '-')"
            )
        if policy_model is not None:
            for tool, entry in profile.tool_config.items():
                _check_policy_entry(f"{name}.tool_config.{tool}", tool, entry, policy_model)
    return profiles


def _check_policy_entry(where: str, tool: str, entry: dict[str, Any], policy_model: type[BaseModel]) -> None:
    if not tool.strip():
        raise ValueError(f"{where}: the tool name is empty")
    for key in NOT_PER_PROFILE:
        if key in entry:
            raise ValueError(
                f"{where}.{key}: the tool index's {key} is the same for every caller; "
                "set it in the server's tool_config"
            )
    try:
        policy_model.model_validate(entry)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(map(str, err["loc"]))
        raise ValueError(f"{where}.{field}: {err['msg'].replace('Value error, ', '')}") from None


def policy_entry_for(tool_config: dict[str, Any], tool: str) -> str | None:
    """The `tool_config` key that applies to exposed name `tool`: the exact name, else the first glob (file order)."""
    if tool in tool_config:
        return tool
    return next((key for key in tool_config if fnmatchcase(tool, key)), None)
