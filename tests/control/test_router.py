"""McpRouter decisions through the real openai client and the fake chat-completions server (the one
allowed double: no model is reachable here), over the tools of a real gateway (cortex + home server)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mcp_nexus.config.control import LLMSettings
from mcp_nexus.control.decision import RouterContext
from mcp_nexus.control.decision_cache import DecisionCache
from mcp_nexus.control.function_schemas import FunctionNames, function_name
from mcp_nexus.control.llm_protocol import LLMError
from mcp_nexus.control.openai_client import OpenAICompatibleClient
from mcp_nexus.control.router import McpRouter
from mcp_nexus.control.rule_router import RuleRouter
from mcp_nexus.control.tool_source import CatalogToolSource
from mcp_nexus.gateway import Gateway
from support.fake_openai import Script, fake_openai, text, tool_call
from support.gateway import running_gateway
from support.home_server import make_devices

from .helpers import API_KEY, control_document

pytestmark = pytest.mark.timeout(60)
ENVIRONMENT = {"devices": make_devices(12)}


@pytest.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[Gateway]:
    document = control_document(tmp_path, None)
    document.pop("control")
    async with running_gateway(document) as gw:
        yield gw


def router_for(url: str, gateway: Gateway, **kwargs: object) -> McpRouter:
    llm = OpenAICompatibleClient(LLMSettings(base_url=url, api_key=API_KEY, max_retries=0))
    return McpRouter(llm, CatalogToolSource(gateway.catalog), **kwargs)  # type: ignore[arg-type]


async def decide(gateway: Gateway, script: Script, goal: str, **kwargs: object):  # type: ignore[no-untyped-def]
    with fake_openai(script) as fake:
        router = router_for(fake.base_url, gateway, **kwargs)
        decision = await router.route(RouterContext(goal, 0, [], ENVIRONMENT))
    return decision, fake


async def test_tool_chosen_has_confidence_0_8(gateway: Gateway) -> None:
    decision, fake = await decide(
        gateway,
        [tool_call("cortex__search_knowledge", {"query": "fastapi"}, content="search first")],
        "find fastapi",
    )
    assert (decision.server_id, decision.tool, decision.arguments) == (
        "cortex",
        "cortex.search_knowledge",
        {"query": "fastapi"},
    )
    assert decision.confidence == 0.8 and decision.error is None and "search first" in decision.reasoning
    offered = [t["function"]["name"] for t in fake.requests[0]["tools"]]
    assert "cortex__add_entity" in offered and "home__turn_on" in offered
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name) for name in offered)


async def test_no_tool_has_confidence_0_3_and_tool_none(gateway: Gateway) -> None:
    decision, _ = await decide(gateway, [text("The goal is already achieved.")], "record fastapi")
    assert decision.tool is None and decision.server_id is None and decision.confidence == 0.3
    assert decision.reasoning == "The goal is already achieved." and decision.error is None


async def test_home_assistant_name_becomes_entity_id(gateway: Gateway) -> None:
    decision, fake = await decide(
        gateway, [tool_call("home__turn_on", {"entity_id": "客厅的灯"})], "打开客厅的灯"
    )
    assert decision.tool == "home.turn_on"
    assert decision.arguments["entity_id"] in {"light.living_room", "light.living_room_lamp"}
    assert "entity_id '客厅的灯' ->" in decision.reasoning
    prompt = fake.requests[0]["messages"][1]["content"]
    assert "light.living_room" in prompt and "客厅" in prompt  # the candidates the model was shown
    result = await gateway.call_tool_result(decision.tool, decision.arguments)  # and the real server takes it
    assert not result.is_error


async def test_cover_position_clamped(gateway: Gateway) -> None:
    decision, _ = await decide(
        gateway,
        [tool_call("home__set_cover_position", {"entity_id": "客厅窗帘", "position": 140})],
        "把客厅窗帘全开",
    )
    assert decision.arguments == {"entity_id": "cover.living_room_curtain", "position": 100}


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (tool_call("cortex__add_entity", '{"id": "fastapi",'), "not valid JSON"),
        (tool_call("cortex__add_entity", "[1, 2]"), "must be a JSON object"),
        (tool_call("cortex__launch_rockets", {}), "unknown tool 'cortex__launch_rockets'"),
        (
            tool_call("cortex__search_knowledge", {"query": "x", "colour": "red"}),
            "arguments colour that cortex.search_knowledge does not take",
        ),
        (
            tool_call("cortex__connect_entities", {"src": "a"}),
            "left out required arguments of cortex.connect_entities: dst, rel",
        ),
    ],
)
async def test_bad_model_output_is_an_error_decision(gateway: Gateway, reply: object, expected: str) -> None:
    decision, _ = await decide(gateway, [reply], "whatever")  # type: ignore[list-item]
    assert decision.error is not None and expected in decision.error
    assert decision.confidence == 0.0 and not decision.usable


async def test_many_tools_are_narrowed_to_max_tools(gateway: Gateway) -> None:
    decision, fake = await decide(
        gateway,
        [tool_call("home__turn_off", {"entity_id": "light.kitchen"})],
        "turn off the kitchen light",
        max_tools=3,
    )
    offered = [t["function"]["name"] for t in fake.requests[0]["tools"]]
    assert len(offered) == 3 and "home__turn_off" in offered
    assert decision.tool == "home.turn_off"


async def test_decision_cache_same_goal_same_tools(gateway: Gateway) -> None:
    cache = DecisionCache()
    with fake_openai([tool_call("home__turn_off", {"entity_id": "light.kitchen"})]) as fake:
        router = router_for(fake.base_url, gateway, cache=cache)
        context = RouterContext("turn off the kitchen light", 0, [], ENVIRONMENT)
        first = await router.route(context)
        second = await router.route(RouterContext("turn off the kitchen light", 0, [], ENVIRONMENT))
        with pytest.raises(LLMError, match="500"):  # another goal is asked again (the script is empty: 500)
            await router.route(RouterContext("turn off the bedroom light", 0, [], ENVIRONMENT))
    assert (
        second.tool == first.tool and second.arguments == first.arguments and "(cached)" in second.reasoning
    )
    assert len(fake.requests) == 2
    assert cache.hits == 1


def test_function_names_map_both_ways() -> None:
    names = FunctionNames(["cortex.add_entity", "cortex__add_entity", "天气.查询", "x" * 100])
    assert names.to_function["cortex.add_entity"] == "cortex__add_entity"
    assert len(set(names.to_tool)) == 4
    for tool, fn in names.to_function.items():
        assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", fn) and names.tool_for(fn) == tool
    assert names.tool_for("invented") is None
    assert len(function_name("y" * 200)) == 64


async def test_rule_router_without_llm(gateway: Gateway) -> None:
    router = RuleRouter(CatalogToolSource(gateway.catalog))
    decision = await router.route(RouterContext("turn on 客厅的灯", 0, [], ENVIRONMENT))
    assert decision.tool == "home.turn_on" and decision.confidence == 0.5
    assert decision.arguments["entity_id"].startswith("light.living_room")
    done = await router.route(
        RouterContext("turn on 客厅的灯", 1, [{"goal": "turn on 客厅的灯", "ok": True}], ENVIRONMENT)
    )
    assert done.tool is None and done.confidence == 0.3
    search = await router.route(RouterContext("search knowledge for fastapi", 0, [], {}))
    assert search.tool == "cortex.search_knowledge" and search.arguments == {
        "query": "search knowledge for fastapi"
    }


async def test_rule_router_moves_a_cover_by_position(gateway: Gateway) -> None:
    router = RuleRouter(CatalogToolSource(gateway.catalog))
    decision = await router.route(RouterContext("把客厅窗帘打开一半", 0, [], ENVIRONMENT))
    assert decision.tool == "home.set_cover_position"
    assert decision.arguments == {"entity_id": "cover.living_room_curtain", "position": 50}


async def test_the_router_reads_the_persisted_tool_index(gateway: Gateway) -> None:
    """The control plane's tool source is the gateway's ToolIndex: tags and BM25 search, kept to
    the tools listed now (a stopped server's remembered tools are not offered)."""
    from mcp_nexus.control.tool_source import IndexToolSource
    from support.polling import eventually

    listed = {t.tool_name for t in CatalogToolSource(gateway.catalog).tools()}
    await eventually(
        lambda: (
            {e.name for e in gateway.index.get_all_tools()} >= {n for n in listed if n.startswith("home.")}
        ),
        what="the index to hold the home server's tools",
    )
    source = IndexToolSource(gateway.index, gateway.catalog)
    assert {t.tool_name for t in source.tools()} == listed
    by_name = {t.tool_name: t for t in source.tools()}
    assert by_name["home.turn_on"].tags == tuple(gateway.index.get_tool_entry("home.turn_on").tags)  # type: ignore[union-attr]
    assert "home.turn_on" in [t.tool_name for t in source.search("turn on a light", 3)]
    assert gateway.index.version in source.version()
    decision = await RuleRouter(source).route(RouterContext("打开客厅的灯", 0, [], ENVIRONMENT))
    assert decision.tool == "home.turn_on"

    await gateway.stop_server("home")
    await eventually(
        lambda: "home.turn_on" not in gateway.catalog.tools, what="home's tools to leave the list"
    )
    assert gateway.index.get_tool_entry("home.turn_on") is not None  # the index remembers them ...
    assert not [
        t for t in source.tools() if t.tool_name.startswith("home.")
    ]  # ... the router is not offered them
    assert not [t for t in source.search("turn on a light", 3) if t.tool_name.startswith("home.")]
