"""A profile's policy overrides: its `tool_config` entry for a tool, as the most specific policy level.

    profiles:
      alice: {tools: ["a.*"], tool_config: {a.search: {cache_ttl: 60, rate_limit: "5/minute"}}}

The pipeline resolves a call's policy with the entry of the caller's profile in force (bound by
the gateway as the call enters) above the tool's own `tool_config`, its server and the gateway
(pipeline/policy.py): the keys the entry sets win for that profile's callers only. Its
`rate_limit` counts the profile's callers in a window of their own; a `cache_ttl` there applies
to any tool (the entry names it), as a tool's own entry may. Keys are exposed names or globs;
the exact name wins, else the first glob in file order.

Entries are parsed once per config: a reload replaces the profiles, so the next call reads the
new overrides (and the resolver, which memoises by the level's identity, resolves anew).
"""

from __future__ import annotations

from collections.abc import Callable

from mcp_nexus.config.profiles import ProfileConfig, policy_entry_for
from mcp_nexus.config.schema import CallPolicy, NexusConfig


class ProfilePolicies:
    """`level(profile, tool)`: the profile's parsed `tool_config` entry for an exposed tool name, or None."""

    def __init__(self, config: Callable[[], NexusConfig]) -> None:
        self._config = config
        self._of: dict[str, ProfileConfig] | None = None
        self._levels: dict[tuple[str, str], CallPolicy | None] = {}  # by (profile, tool)
        # One parsed object per entry, by (profile, key): tools sharing a glob share it (the
        # resolver memoises by the level's identity).
        self._entries: dict[tuple[str, str], CallPolicy] = {}

    def level(self, profile: str, tool: str) -> CallPolicy | None:
        profiles = self._config().profiles
        if profiles is not self._of:  # a reload: parse the new entries as they are asked for
            self._levels, self._entries, self._of = {}, {}, profiles
        key = (profile, tool)
        if key in self._levels:
            return self._levels[key]
        config = profiles.get(profile)
        found: CallPolicy | None = None
        entry = policy_entry_for(config.tool_config, tool) if config is not None else None
        if config is not None and entry is not None:
            found = self._entries.get((profile, entry))
            if found is None:  # checked when the config loaded
                found = self._entries[(profile, entry)] = CallPolicy.model_validate(config.tool_config[entry])
        self._levels[key] = found
        return found
