"""The `xiaozhi:` settings, MCP_ENDPOINT, and how secrets in URLs are masked."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from pydantic import ValidationError

from mcp_nexus.config.load import load_config
from mcp_nexus.config.schema import NexusConfig
from mcp_nexus.config.secrets import RedactingFilter, mask_url, redact, secrets_of
from mcp_nexus.config.xiaozhi import XiaozhiSettings, endpoints_from_env, with_env_endpoints
from mcp_nexus.frontends.xiaozhi.reconnect import Backoff

JWT = "eyJhbGciOiJIUzI1NiJ9.eyJ1c2VySWQiOjF9.c2lnbmF0dXJlX3NlY3JldA"


def test_defaults_match_the_endpoint_rules() -> None:
    settings = XiaozhiSettings()
    assert settings.result_limit_bytes is None  # unset: gateway.result_limits["xiaozhi"] (1024) applies
    assert NexusConfig().result_limits()["xiaozhi"] == 1024
    assert settings.call_timeout < 30  # the endpoint waits ~30 s
    assert (settings.backoff_min, settings.backoff_max) == (1.0, 60.0)
    assert 20 <= settings.ping_interval <= 30
    assert settings.envelope_server.idle_timeout == 120 and settings.envelope_server.page_bytes == 8000


def test_mcp_endpoint_holds_one_or_several_urls() -> None:
    assert endpoints_from_env({"MCP_ENDPOINT": "wss://a/mcp/?token=1"}) == ["wss://a/mcp/?token=1"]
    env = {"MCP_ENDPOINT": " wss://a/mcp/?token=1 ; wss://b/mcp/?token=2;"}
    assert endpoints_from_env(env) == ["wss://a/mcp/?token=1", "wss://b/mcp/?token=2"]
    assert endpoints_from_env({}) == []


def test_env_endpoints_merge_with_config_without_duplicates() -> None:
    base = XiaozhiSettings(endpoints=["wss://a/mcp/?token=1"], result_limit_bytes=2048)
    merged = with_env_endpoints(
        base, {"MCP_ENDPOINT": "wss://a/mcp/?token=1;https://b/mcp/?token=2"}, ["ws://c/x"]
    )
    assert merged.endpoints == ["wss://a/mcp/?token=1", "wss://b/mcp/?token=2", "ws://c/x"]
    assert merged.result_limit_bytes == 2048 and "result_limit_bytes" in merged.model_fields_set
    assert with_env_endpoints(base, {}) is base


def test_bad_values_are_named_without_the_secret() -> None:
    with pytest.raises(ValidationError) as bad_url:
        XiaozhiSettings(endpoints=[f"ftp://host/mcp/?token={JWT}"])
    messages = " ".join(error["msg"] for error in bad_url.value.errors())
    assert "endpoints[0] must be a ws:// or wss:// URL" in messages and JWT not in messages
    with pytest.raises(ValidationError, match="less than 30"):
        XiaozhiSettings(call_timeout=30)
    with pytest.raises(ValidationError, match="backoff_max"):
        XiaozhiSettings(backoff_min=5, backoff_max=1)
    with pytest.raises(ValidationError, match="needs 'token'"):
        XiaozhiSettings.model_validate({"envelope_server": {"enabled": True}})
    with pytest.raises(ValidationError, match="Extra inputs"):
        XiaozhiSettings.model_validate({"endpoint": "wss://a"})


def test_urls_are_masked_for_logs_and_status() -> None:
    url = f"wss://api.xiaozhi.me/mcp/?token={JWT}"
    assert mask_url(url) == "wss://api.xiaozhi.me/mcp/?token=***JldA"
    assert mask_url("ws://h/mcp/?token=short&x=1") == "ws://h/mcp/?token=***&x=1"
    assert mask_url("ws://user:pw@h/p") == "ws://user:***@h/p"
    assert secrets_of(url) == [JWT]
    assert redact(f"GET /mcp/?token={JWT} failed", [JWT]) == "GET /mcp/?token=***JldA failed"


def test_websockets_debug_lines_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("test.xiaozhi.redacted")
    log.addFilter(RedactingFilter([JWT]))
    with caplog.at_level(logging.DEBUG, logger="test.xiaozhi.redacted"):
        log.debug("> GET %s HTTP/1.1", f"/mcp/?token={JWT}")
    assert JWT not in caplog.text and "token=***JldA" in caplog.text


def test_backoff_doubles_to_the_max_with_jitter_and_resets() -> None:
    settings = XiaozhiSettings(backoff_min=1, backoff_max=60, backoff_jitter=0.2)
    backoff = Backoff(settings, rng=lambda: 1.0)  # the most jitter: +20 %
    delays = [backoff.next_delay() for _ in range(8)]
    assert delays == pytest.approx([1.2, 2.4, 4.8, 9.6, 19.2, 38.4, 72.0, 72.0])
    backoff.reset()
    assert backoff.next_delay() == pytest.approx(1.2)
    assert Backoff(settings, rng=lambda: 0.0).max_delay() == 60


def test_mcp_config_json_with_a_xiaozhi_section_loads(tmp_path: Path) -> None:
    path = tmp_path / "mcp_config.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "calc": {"type": "stdio", "command": "python", "args": ["calc.py"]},
                    "off": {"type": "stdio", "command": "x", "disabled": True},
                },
                "xiaozhi": {
                    "endpoints": ["wss://api.xiaozhi.me/mcp/?token=abc"],
                    "tools": {"deny": ["calc.*"]},
                },
            }
        )
    )
    config, _ = load_config(path, include_builtins=False)
    assert config.xiaozhi.endpoints == ["wss://api.xiaozhi.me/mcp/?token=abc"]
    assert config.xiaozhi.tools.deny == ["calc.*"]
    assert config.servers["calc"].command == "python" and not config.servers["off"].enabled
