"""The governance building blocks on their own: keys, previews, folder, policies, config errors.

The cache store has its own tests in tests/stores.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from mcp_nexus.config.errors import ConfigError
from mcp_nexus.config.load import config_from_document
from mcp_nexus.pipeline.cache_key import cache_key, canonical_json
from mcp_nexus.pipeline.offload_folder import OffloadFolder
from mcp_nexus.pipeline.preview import render, scan_shape, utf8_cut


def test_cache_key_ignores_key_order_and_nesting_order() -> None:
    one = cache_key("gov.stamp", {"a": 1, "b": {"x": [1, 2], "y": None}})
    two = cache_key("gov.stamp", {"b": {"y": None, "x": [1, 2]}, "a": 1})
    assert one == two


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ({"a": "1,b=2"}, {"a": "1", "b": "2"}),  # naive "k=v" joining collides
        ({"a": "b", "c": ""}, {"a": "bc"}),  # naive value concatenation collides
        ({"a": 1}, {"a": "1"}),  # str() of the value collides
        ({"a": 1}, {"a": True}),  # 1 == True in Python
        ({"ab": "c"}, {"a": "bc"}),  # key/value boundary
    ],
)
def test_cache_key_collision_attempts_stay_apart(left: dict[str, object], right: dict[str, object]) -> None:
    assert cache_key("t", left) != cache_key("t", right)


def test_cache_key_separates_tool_names() -> None:
    assert cache_key("a.b", {}) != cache_key("a", {"b": None}) != cache_key("a.c", {})


def test_canonical_json_refuses_what_json_cannot_say() -> None:
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})
    with pytest.raises(TypeError):
        canonical_json({"x": object()})


def test_list_preview_has_length_and_two_trimmed_items() -> None:
    payload = json.dumps([{"id": i, "name": "n" * 1000} for i in range(5000)])
    preview = render(scan_shape(payload), 2048)
    assert "array of 5000 items" in preview
    assert '"id": 0' in preview and '"id": 1' in preview and '"id": 2' not in preview
    assert len(preview.encode()) <= 2048


def test_object_preview_lists_keys_with_types_and_sizes() -> None:
    preview = render(scan_shape(json.dumps({"devices": [1, 2, 3], "meta": {"a": 1}, "name": "x"})), 2048)
    assert "object with 3 keys" in preview
    assert "devices: array(3 items), 9 bytes" in preview
    assert "meta: object(1 keys)" in preview and "name: string" in preview


def test_text_preview_shows_first_lines_and_broken_json_is_text() -> None:
    preview = render(scan_shape("line one\nline two\n" + "x\n" * 500), 2048)
    assert preview.startswith("Preview: text of 503 lines") and "line one\nline two" in preview
    assert "text of" in render(scan_shape('[{"a": 1}, {"a": '), 2048)  # truncated JSON


def test_preview_shrinks_to_any_budget() -> None:
    shape = scan_shape(json.dumps({f"key{i}": "v" * 100 for i in range(300)}))
    for budget in (2048, 500, 120, 40, 5):
        assert len(render(shape, budget).encode()) <= budget


def test_utf8_cut_never_splits_a_character() -> None:
    text = "é€😀" * 10
    for limit in range(0, 30):
        cut = utf8_cut(text, limit)
        assert len(cut.encode()) <= limit
        assert text.startswith(cut)


def test_offload_folder_is_private_and_writes_atomically(tmp_path: Path) -> None:
    folder = OffloadFolder(tmp_path / "deep" / "offload", max_age=60, max_bytes=10_000)
    name = folder.write(['[{"a": 1}]'])
    assert stat.S_IMODE((tmp_path / "deep" / "offload").stat().st_mode) == 0o700
    assert name.startswith("tool_output_") and name.endswith(".json")
    assert (folder.path / name).read_text() == '[{"a": 1}]'
    assert [p.name for p in folder.path.iterdir()] == [name]  # no temp file left behind


def test_offload_retention_by_age_then_total_size(tmp_path: Path) -> None:
    folder = OffloadFolder(tmp_path, max_age=100, max_bytes=250)
    old = folder.write(["o" * 10])
    os.utime(folder.path / old, (time.time() - 200, time.time() - 200))
    first = folder.write(["a" * 100])
    os.utime(folder.path / first, (time.time() - 50, time.time() - 50))
    second = folder.write(["b" * 100])
    assert not (folder.path / old).exists()  # too old
    assert {p.name for p in folder.path.iterdir()} == {first, second}
    third = folder.write(["c" * 100])  # 300 bytes > 250: the oldest goes
    assert {p.name for p in folder.path.iterdir()} == {second, third}
    alone = folder.write(["d" * 1000])  # bigger than the whole budget: kept, the others go
    assert {p.name for p in folder.path.iterdir()} == {alone}


def test_unwritable_offload_folder_raises_oserror(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(OSError):
        OffloadFolder(blocker / "offload", max_age=1, max_bytes=1).write(["x"])


@pytest.mark.parametrize(
    ("ttl", "expected"),
    [(-5, "greater than or equal to 0"), ("ten", "valid number"), ([1], "valid number")],
)
def test_bad_cache_ttl_is_a_config_error_naming_the_field(ttl: object, expected: str) -> None:
    doc = {
        "gateway": {"include_builtins": False},
        "servers": {"gov": {"command": "x", "tool_config": {"stamp": {"cache_ttl": ttl}}}},
    }
    with pytest.raises(ConfigError) as caught:
        config_from_document(doc)
    message = str(caught.value)
    assert "servers.gov.tool_config.stamp.cache_ttl" in message and expected in message


@pytest.mark.parametrize(
    ("gateway", "field"),
    [
        ({"cache_ttl": -1}, "gateway.cache_ttl"),
        ({"rate_limit": "fast"}, "gateway.rate_limit"),
        ({"caller_rate_limit": "lots"}, "gateway.caller_rate_limit"),
        ({"result_limits": {"xiaozhi": 0}}, "gateway.result_limits"),
        ({"offload_max_age": 0}, "gateway.offload_max_age"),
        ({"retry_backoff": -1}, "gateway.retry_backoff"),
    ],
)
def test_bad_governance_settings_name_their_field(gateway: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        config_from_document({"gateway": {"include_builtins": False, **gateway}})
