"""Tool names for Xiaozhi: [A-Za-z0-9_-]{1,64}, unique, deterministic, mapped back."""

from __future__ import annotations

import random
import re

from mcp_nexus.frontends.xiaozhi.names import MAX_NAME_LENGTH, ToolNameMap, sanitize

VALID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def test_dots_and_other_characters_become_underscores() -> None:
    assert sanitize("calc.add") == "calc_add"
    assert sanitize("home assistant/light.on") == "home_assistant_light_on"
    assert sanitize("天气.查询") == "_____"
    assert sanitize("") == "tool"


def test_names_are_cut_to_64_characters() -> None:
    mapping = ToolNameMap.build(["a" * 100])
    assert mapping.to_exposed["a" * 100] == "a" * MAX_NAME_LENGTH


def test_collisions_get_a_deterministic_suffix_and_valid_names_keep_theirs() -> None:
    names = ["calc.add", "calc_add", "calc-add", "calc add"]
    mapping = ToolNameMap.build(names)
    assert mapping.to_exposed["calc_add"] == "calc_add"  # already valid: unchanged
    assert mapping.to_exposed["calc-add"] == "calc-add"
    others = {mapping.to_exposed["calc.add"], mapping.to_exposed["calc add"]}
    assert len(others) == 2 and all(re.fullmatch(r"calc_add_[0-9a-f]{6}", name) for name in others)
    for original in names:
        assert mapping.original(mapping.to_exposed[original]) == original


def test_long_names_that_clash_after_cutting_stay_unique_and_short() -> None:
    names = ["server." + "x" * 80 + suffix for suffix in ("one", "two", "three")]
    exposed = ToolNameMap.build(names).to_exposed
    assert len(set(exposed.values())) == 3
    assert all(VALID.match(name) for name in exposed.values())


def test_mapping_does_not_depend_on_order() -> None:
    names = [f"srv{i % 3}.tool.{i % 5}" for i in range(30)] + ["srv0_tool_1", "a.b", "a_b", "a-b"]
    first = ToolNameMap.build(names).to_exposed
    shuffled = names[:]
    random.Random(7).shuffle(shuffled)
    assert ToolNameMap.build(shuffled).to_exposed == first
    assert len(set(first.values())) == len(set(names))
    assert all(VALID.match(name) for name in first.values())


def test_unknown_names_pass_through_to_the_gateway() -> None:
    assert ToolNameMap.build(["a.b"]).original("zzz") == "zzz"
