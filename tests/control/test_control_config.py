"""The llm/control sections: accepted in the native and the controller formats, the key masked and redacted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_nexus.cli.config_check import render
from mcp_nexus.config.errors import ConfigError
from mcp_nexus.config.load import load_config
from mcp_nexus.config.secrets import SecretRedactor
from mcp_nexus.control.control_plane import ControlPlane

KEY = "sk-qwen-secret-key-000111222"


def write(tmp_path: Path, document: dict[str, object]) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(document))
    return path


def test_controller_format_with_llm_and_control(tmp_path: Path) -> None:
    document = {
        "mcp_servers": [{"id": "ros2_mcp", "url": "http://127.0.0.1:9/mcp", "timeout": 60}],
        "cache_ttl_seconds": 3600,
        "force_refresh_on_init": False,
        "llm": {
            "base_url": "https://dashscope.aliyuncs.com/compatible-mode/v1",
            "api_key": KEY,
            "model": "qwen3-max",
        },
        "control": {"mode": "goal", "max_steps": 5},
    }
    config, warnings = load_config(write(tmp_path, document), {}, include_builtins=False)
    assert not warnings
    assert config.llm.model == "qwen3-max" and config.control.mode == "goal" and config.control.max_steps == 5
    assert ControlPlane.wanted(config)
    shown = render(config)
    assert KEY not in shown and '"model": "qwen3-max"' in shown
    assert KEY not in SecretRedactor.from_config(config).redact(f"oops {KEY}")
    assert KEY not in repr(config.llm)


def test_no_llm_no_control_plane_and_bad_values_are_named(tmp_path: Path) -> None:
    config, _ = load_config(write(tmp_path, {"servers": {}}), {}, include_builtins=False)
    assert not ControlPlane.wanted(config)
    with pytest.raises(ConfigError, match=r"control.mode"):
        load_config(write(tmp_path, {"control": {"mode": "dream"}}), {}, include_builtins=False)
    with pytest.raises(ConfigError, match=r"llm.temperature"):
        load_config(write(tmp_path, {"llm": {"temperature": 9}}), {}, include_builtins=False)
