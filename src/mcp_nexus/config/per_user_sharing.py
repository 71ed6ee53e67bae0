"""A per-user server's results are never shared: `cache_scope: public` may not reach its tools.

Its calls carry each user's own credentials, so a result one user got may hold what only that
user may see. The cache step keys on the caller unless a tool is declared shareable; the check
below refuses every level that could declare it for such a server (the gateway's default, the
server, its tool_config, a profile's tool_config entry that can match one of its tools).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any


def check_per_user_sharing(config: Any) -> None:
    """Raise ValueError naming the field that would share a per-user server's results."""
    per_user = [s for s in config.servers.values() if s.auth is not None and s.auth.per_user]
    if not per_user:
        return
    advice = "its results are each user's own; mark only tools of shared servers public"
    names = ", ".join(repr(s.name) for s in per_user)
    if config.gateway.cache_scope == "public":
        raise ValueError(
            f"gateway.cache_scope: 'public' would share the results of per-user server(s) {names}: {advice}"
        )
    separator = config.gateway.name_separator
    for server in per_user:
        if server.cache_scope == "public":
            raise ValueError(f"servers.{server.name}.cache_scope: 'public' on a per-user server: {advice}")
        for tool, policy in server.tool_config.items():
            if policy.cache_scope == "public":
                raise ValueError(
                    f"servers.{server.name}.tool_config.{tool}.cache_scope: 'public' on a per-user server: {advice}"
                )
        some_tool = f"{server.name}{separator}\x00"  # matches an entry naming the server's tools by glob
        for profile_name, profile in config.profiles.items():
            for key, entry in profile.tool_config.items():
                if entry.get("cache_scope") != "public":
                    continue
                if key.startswith(f"{server.name}{separator}") or fnmatchcase(some_tool, key):
                    raise ValueError(
                        f"profiles.{profile_name}.tool_config.{key}.cache_scope: 'public' reaches the "
                        f"per-user server {server.name!r}: {advice}"
                    )
