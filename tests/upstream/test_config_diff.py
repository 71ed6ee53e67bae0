"""Which config changes need a server restart (its connection) and which apply live."""

from __future__ import annotations

import pytest

from mcp_nexus.config.schema import ServerConfig
from mcp_nexus.upstream.config_diff import ServerChange, diff_configs
from support.gateway import load


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("command", "/usr/bin/python3"),
        ("args", ["-m", "support.faulty_server", "--name", "other"]),
        ("env", {"PYTHONPATH": "/elsewhere"}),
        ("cwd", "/tmp"),
        ("transport", "http"),
        ("url", "http://127.0.0.1:1/mcp"),
        ("headers", {"X-Key": "1"}),
        ("api_key", "secret"),
    ],
)
def test_connection_fields_need_a_restart(field: str, value: object) -> None:
    base = {"name": "s", "transport": "http", "url": "http://127.0.0.1:9/mcp"}
    if field in ("command", "args", "env", "cwd"):
        base = {"name": "s", "transport": "stdio", "command": "python3"}
    old = ServerConfig.model_validate(base)
    new = ServerConfig.model_validate(
        {**base, field: value, **({"url": "http://x/mcp"} if field == "transport" else {})}
    )
    assert ServerChange("s", old, new, [field]).needs_restart


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("priority", 99),
        ("namespace", "x"),
        ("tools", {"deny": ["crash"]}),
        ("cache_ttl", 60),
        ("rate_limit", "1/second"),
        ("offload_threshold", 10),
        ("health", {"interval": 5}),
        ("restart", {"max_attempts": 1}),
        ("timeout", 3),
    ],
)
def test_other_fields_apply_live(field: str, value: object) -> None:
    base = {"name": "s", "transport": "stdio", "command": "python3"}
    old, new = ServerConfig.model_validate(base), ServerConfig.model_validate({**base, field: value})
    assert not ServerChange("s", old, new, [field]).needs_restart


def test_diff_sorts_servers_into_added_removed_changed_unchanged_and_names_gateway_fields() -> None:
    def config(servers: dict[str, object], **gateway: object) -> object:
        return load({"gateway": {"include_builtins": False, **gateway}, "servers": servers})

    old = config({"same": {"command": "a"}, "moved": {"command": "b"}, "gone": {"command": "c"}})
    new = config(
        {"same": {"command": "a"}, "moved": {"command": "b2", "priority": 5}, "new": {"command": "d"}},
        port=9999,
    )
    diff = diff_configs(old, new)  # type: ignore[arg-type]
    assert (diff.added, diff.removed, diff.unchanged) == (["new"], ["gone"], ["same"])
    [change] = diff.changed
    assert change.name == "moved" and set(change.fields) == {"command", "priority"} and change.needs_restart
    assert diff.gateway_fields == ["port"] and diff.restart_only_fields == ["port"]
    assert not diff.empty and diff_configs(old, old).empty  # type: ignore[arg-type]


def test_a_key_set_explicitly_to_its_default_is_a_change() -> None:
    # A key present as null can turn a default off (governance reads "set explicitly").
    plain = ServerConfig.model_validate({"name": "s", "transport": "stdio", "command": "x"})
    explicit = ServerConfig.model_validate(
        {"name": "s", "transport": "stdio", "command": "x", "rate_limit": None}
    )
    old = load({"gateway": {"include_builtins": False}, "servers": {}})
    new = old.model_copy(deep=True)
    old.servers["s"], new.servers["s"] = plain, explicit
    [change] = diff_configs(old, new).changed
    assert change.fields == ["rate_limit"] and not change.needs_restart
