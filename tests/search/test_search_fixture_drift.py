"""fixtures/real_tools.json is what the installed servers list: a changed server shows here, not as a silent drift."""

from __future__ import annotations

from search.real_tools import capture, load_fixture

GATEWAY_OWN = {"python_sandbox", "find_tools", "call_tool"}
"""The gateway's own tools: their descriptions are Nexus's to change; the fixture keeps their names."""


async def test_the_fixture_matches_what_the_real_servers_list() -> None:
    live = {tool["name"]: tool for tool in await capture()}
    saved = {tool["name"]: tool for tool in load_fixture()}
    hint = "servers changed: rewrite it with .venv/bin/python tests/search/real_tools.py and re-run bench/search_recall.py"
    assert sorted(live) == sorted(saved), hint
    changed = [name for name in saved if name not in GATEWAY_OWN and live[name] != saved[name]]
    assert not changed, f"{changed}: {hint}"
