"""A per-user server's results can never be declared shareable (config/per_user_sharing.py)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_nexus.config.errors import ConfigError
from mcp_nexus.config.load import config_from_document

PER_USER = {"url": "https://crm.example/mcp", "auth": {"per_user": True}}


def document(server: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    gateway = {"include_builtins": False, **top.pop("gateway", {})}
    return {"gateway": gateway, "servers": {"crm": {**PER_USER, **(server or {})}}, **top}


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        (document(gateway={"cache_scope": "public"}), "gateway.cache_scope"),
        (document({"cache_scope": "public"}), "servers.crm.cache_scope"),
        (
            document({"tool_config": {"lookup": {"cache_scope": "public"}}}),
            "servers.crm.tool_config.lookup.cache_scope",
        ),
        (
            document(profiles={"sales": {"tool_config": {"crm.*": {"cache_scope": "public"}}}}),
            "profiles.sales.tool_config.crm.*.cache_scope",
        ),
        (
            document(profiles={"sales": {"tool_config": {"*": {"cache_scope": "public"}}}}),
            "profiles.sales.tool_config.*.cache_scope",
        ),
    ],
)
def test_public_cache_scope_reaching_a_per_user_server_is_refused(doc: dict[str, Any], field: str) -> None:
    with pytest.raises((ConfigError, ValueError)) as refused:
        config_from_document(doc)
    assert field in str(refused.value) and "per-user" in str(refused.value)


def test_private_scope_other_servers_and_unrelated_globs_are_accepted() -> None:
    doc = document(
        {"cache_scope": "private"},
        profiles={"sales": {"tool_config": {"time.*": {"cache_scope": "public"}}}},
    )
    doc["servers"]["time"] = {"command": "mcp-server-time", "cache_scope": "public"}
    config, _warnings = config_from_document(doc)
    assert config.servers["crm"].auth is not None and config.servers["crm"].auth.per_user
