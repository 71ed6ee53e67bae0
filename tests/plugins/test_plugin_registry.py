"""The registry: entry points read per group, failures reported by name, names not taken twice,
steps placed where they ask; Nexus's own declarations match its fallback table; and no file of
Nexus names the test plugin (it adds its transport, step and server with no edit to Nexus)."""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from mcp_nexus.plugins.builtin import BUILTIN_ENTRY_POINTS, STEPS_GROUP, TRANSPORTS_GROUP
from mcp_nexus.plugins.registry import Registry, installed_entry_points
from mcp_nexus.plugins.specs import StepSpec
from mcp_nexus.plugins.step_order import order_steps

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_declares_exactly_the_builtin_table() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    assert declared == BUILTIN_ENTRY_POINTS


def test_no_nexus_file_names_the_test_plugin() -> None:
    words = ("nexus_test_plugin", "nexus-test-plugin", "call_tag", "plugin_echo", "WebSocketSession")
    files = [*ROOT.joinpath("src").rglob("*.py"), ROOT / "pyproject.toml"]
    named = [f"{path}: {word}" for path in files for word in words if word in path.read_text()]
    assert named == []


def _source(extra: dict[str, list[EntryPoint]]) -> object:
    def source(group: str) -> Iterable[EntryPoint]:
        return [*installed_entry_points(group), *extra.get(group, [])]

    return source


def test_a_plugin_cannot_take_a_builtin_name_and_a_wrong_object_is_reported() -> None:
    extra = {
        TRANSPORTS_GROUP: [
            EntryPoint("stdio", "nexus_test_plugin.transport:WEBSOCKET", TRANSPORTS_GROUP),
            EntryPoint("misnamed", "nexus_test_plugin.transport:WEBSOCKET", TRANSPORTS_GROUP),
            EntryPoint("missing", "no_such_module_here:X", TRANSPORTS_GROUP),
        ]
    }
    found = Registry(_source(extra))  # type: ignore[arg-type]
    transports = found.transports()
    assert transports["stdio"].session == "mcp_nexus.upstream.stdio:StdioSession"  # the built-in kept
    assert "websocket" in transports and "misnamed" not in transports and "missing" not in transports
    errors = {record.name: record.error for record in found.errors()}
    assert errors["stdio"] == "the name 'stdio' is a built-in's"
    assert (
        errors["misnamed"] == "ValueError: its TransportSpec is named 'websocket', its entry point 'misnamed'"
    )
    assert errors["missing"].startswith("ModuleNotFoundError")


def test_builtins_load_from_the_table_when_the_installed_metadata_lacks_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    found = Registry(lambda group: [])
    assert set(found.transports()) == {"stdio", "http", "sse", "embedded"}
    assert set(found.steps()) == set(BUILTIN_ENTRY_POINTS[STEPS_GROUP])
    assert "lacks its own entry points" in caplog.text


def _step(name: str, **place: str) -> StepSpec:
    return StepSpec(name, lambda context: None, **place)  # type: ignore[arg-type]


def test_steps_are_placed_before_after_or_innermost_and_a_missing_anchor_is_named() -> None:
    builtin = {
        name: spec for name, spec in Registry(lambda group: []).steps().items() if spec.order is not None
    }
    specs = {
        **builtin,
        "a": _step("a", after="cache"),
        "b": _step("b", after="cache"),
        "c": _step("c", before="cache"),
        "d": _step("d", after="a"),  # anchored on another plugin's step
        "e": _step("e"),
        "f": _step("f", before="nothing_here"),
    }
    ordered, problems = order_steps(specs)
    assert [spec.name for spec in ordered] == [
        "errors", "size_limit", "c", "cache", "a", "d", "b", "validate", "rate_limit",
        "offload", "retry", "timeout", "e",
    ]  # fmt: skip
    assert problems == {"f": "placed before 'nothing_here', which is no installed step"}


def test_a_step_block_needs_defaults_for_every_field() -> None:
    from pydantic import BaseModel

    class Needs(BaseModel):
        level: int

    import sys
    import types as pytypes

    module = pytypes.ModuleType("h23_needs_defaults")
    module.STEP = StepSpec("needs", lambda context: None, config_model=Needs)  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    try:
        found = Registry(
            _source({STEPS_GROUP: [EntryPoint("needs", f"{module.__name__}:STEP", STEPS_GROUP)]})
        )  # type: ignore[arg-type]
        assert "needs" not in found.steps()
        assert (
            found.errors()[0].error
            == "ValueError: every field of its config block needs a default: ['level']"
        )
    finally:
        del sys.modules[module.__name__]
