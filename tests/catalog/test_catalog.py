"""The catalog on its own: exposed names, candidates in priority order, tool filters, and the
owners the route asks about when a name is missing (servers down, servers still connecting)."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest

from mcp_nexus.catalog.catalog import Catalog
from mcp_nexus.catalog.local_tools import LocalTool
from mcp_nexus.catalog.names import exposed_name, is_allowed
from mcp_nexus.config.schema import ToolFilter
from support.stub_upstream import StubUpstream, answer, tool


def built(*upstreams: StubUpstream, separator: str = ".") -> Catalog:
    catalog = Catalog(separator)
    catalog.rebuild(upstreams)  # type: ignore[arg-type]
    return catalog


# -- names ------------------------------------------------------------------------------------


def test_exposed_names_are_namespaced_by_the_server_key_unless_told_otherwise() -> None:
    catalog = built(
        StubUpstream("files", ["read", "write"]),  # namespace: the key
        StubUpstream("web", ["fetch"], namespace="net"),  # namespace: its own
        StubUpstream("bare", ["echo"], namespace=""),  # no namespace: the server's own name
    )
    assert set(catalog.tools) == {"files.read", "files.write", "net.fetch", "echo"}
    exposed = {t.name: t for t in catalog.tool_list}
    assert exposed["net.fetch"].description == "the tool fetch"  # the tool, renamed, nothing else changed
    assert (
        catalog.tools["net.fetch"].candidates[0].tool.name == "fetch"
    )  # the server's own name, for the call


def test_the_separator_is_the_gateways_setting() -> None:
    catalog = built(StubUpstream("files", ["read"]), separator="__")
    assert set(catalog.tools) == {"files__read"}
    assert exposed_name("files", "read", "__") == "files__read" and exposed_name("", "read") == "read"


def test_prompts_are_namespaced_like_tools() -> None:
    server = StubUpstream("p")
    server.prompts = [types.Prompt(name="greet")]
    bare = StubUpstream("q", namespace="")
    bare.prompts = [types.Prompt(name="greet")]
    catalog = built(server, bare)
    assert set(catalog.prompts) == {"p.greet", "greet"}
    assert {p.name for p in catalog.prompt_list} == {"p.greet", "greet"}
    assert catalog.prompts["p.greet"][0].prompt.name == "greet"


# -- priority -----------------------------------------------------------------------------


def test_candidates_of_a_shared_name_come_highest_priority_first() -> None:
    low = StubUpstream("low", [tool("echo", description="low's echo")], namespace="", priority=10)
    high = StubUpstream("high", [tool("echo", description="high's echo")], namespace="", priority=90)
    middle = StubUpstream("middle", [tool("echo", description="middle's echo")], namespace="", priority=50)
    catalog = built(low, high, middle)  # the order given does not matter
    entry = catalog.tools["echo"]
    assert [c.upstream.name for c in entry.candidates] == ["high", "middle", "low"]
    assert [c.priority for c in entry.candidates] == [90, 50, 10]
    assert entry.tool.description == "high's echo"  # clients see the winner's tool


def test_equal_priorities_are_ordered_by_name_never_by_start_order() -> None:
    first = built(StubUpstream("b", ["echo"], namespace=""), StubUpstream("a", ["echo"], namespace=""))
    second = built(StubUpstream("a", ["echo"], namespace=""), StubUpstream("b", ["echo"], namespace=""))
    assert [c.upstream.name for c in first.tools["echo"].candidates] == ["a", "b"]
    assert [c.upstream.name for c in second.tools["echo"].candidates] == ["a", "b"]


def test_transport_defaults_set_the_priority_when_none_is_configured() -> None:
    embedded = StubUpstream("e", ["echo"], namespace="")
    stdio = StubUpstream("s", ["echo"], namespace="", transport="stdio", command="x", module=None)
    assert [c.upstream.name for c in built(stdio, embedded).tools["echo"].candidates] == ["e", "s"]


def test_the_gateways_own_tools_shadow_an_upstream_tool_of_the_same_name() -> None:
    async def handler(arguments: dict[str, Any], caller: Any) -> types.CallToolResult:
        return answer("local")

    catalog = Catalog()
    catalog.local_tools["python_sandbox"] = LocalTool(tool("python_sandbox", description="ours"), handler)
    catalog.rebuild([StubUpstream("bare", ["python_sandbox"], namespace="")])  # type: ignore[list-item]
    entry = catalog.tools["python_sandbox"]
    assert entry.local is not None and entry.candidates == () and entry.tool.description == "ours"


# -- filters -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "allowed"),
    [
        ({}, {"read", "write", "delete", "echo"}),
        ({"allow": ["read", "write"]}, {"read", "write"}),
        ({"deny": ["delete"]}, {"read", "write", "echo"}),
        ({"allow": ["*r*", "del*"], "deny": ["del*"]}, {"read", "write"}),  # allow first, then deny
        ({"allow": []}, set()),  # an empty allow-list allows nothing
    ],
)
def test_allow_then_deny_filters_what_a_server_exposes(rules: dict[str, Any], allowed: set[str]) -> None:
    catalog = built(StubUpstream("s", ["read", "write", "delete", "echo"], namespace="", tools=rules))
    assert set(catalog.tools) == allowed
    filter_ = ToolFilter.model_validate(rules)
    assert {name for name in ("read", "write", "delete", "echo") if is_allowed(name, filter_)} == allowed


def test_filters_match_the_servers_own_names_not_the_exposed_ones() -> None:
    catalog = built(StubUpstream("s", ["read", "write"], tools={"deny": ["s.read"]}))
    assert set(catalog.tools) == {"s.read", "s.write"}  # "s.read" is not the server's name for it


# -- servers that are not ready -------------------------------------------------------------


def test_a_server_that_is_down_offers_nothing_but_is_the_offline_owner_of_its_names() -> None:
    down = StubUpstream("down", ["echo", "hidden"], ready=False, tools={"deny": ["hidden"]})
    catalog = built(down, StubUpstream("up", ["echo"]))
    assert set(catalog.tools) == {"up.echo"}
    assert catalog.offline_owner("down.echo") is down
    assert catalog.offline_owner("down.hidden") is None  # filtered out: never offered
    assert catalog.offline_owner("up.echo") is None  # served: not offline
    assert catalog.offline_owner("nobody.echo") is None


def test_a_bare_name_still_served_by_another_server_is_not_offline() -> None:
    down = StubUpstream("down", ["echo"], namespace="", ready=False)
    catalog = built(down, StubUpstream("up", ["echo"], namespace=""))
    assert [c.upstream.name for c in catalog.tools["echo"].candidates] == ["up"]
    assert catalog.offline_owner("echo") is None


def test_connecting_owners_are_the_connecting_servers_that_may_offer_a_name() -> None:
    namespaced = StubUpstream("late", ready=False, connecting=True)
    bare = StubUpstream("bare", ready=False, connecting=True, namespace="", tools={"allow": ["lookup*"]})
    stopped = StubUpstream("stopped", ready=False)  # not connecting: never waited for
    catalog = built(namespaced, bare, stopped)
    assert catalog.connecting_owners("late.anything") == [namespaced]
    assert catalog.connecting_owners("lookup_user") == [bare]  # by its declared tools
    assert catalog.connecting_owners("other") == []  # not allowed on the bare server
    assert catalog.connecting_owners("stopped.echo") == []
    assert catalog.connecting_owners("latex.echo") == []  # a prefix of the namespace is not enough


# -- rebuilds -------------------------------------------------------------------------------


def test_rebuild_reports_which_lists_changed() -> None:
    server = StubUpstream("s", ["a"])
    catalog = Catalog()
    assert catalog.rebuild([server]) == {"tools", "resources", "prompts"}  # type: ignore[list-item]
    assert catalog.rebuild([server]) == set()  # type: ignore[list-item]
    server.tools.append(tool("b"))
    assert catalog.rebuild([server]) == {"tools"}  # type: ignore[list-item]
    server.state = server.state.__class__.CRASHED
    assert catalog.rebuild([server]) == {"tools"}  # type: ignore[list-item]
    assert catalog.tools == {} and catalog.offline_owner("s.b") is server


def test_resources_exact_listings_first_then_matching_templates() -> None:
    listed = StubUpstream("listed", priority=10)
    listed.resources = [types.Resource(uri="demo://info", name="info")]
    templated = StubUpstream("templated", priority=90)
    templated.resource_templates = [types.ResourceTemplate(uri_template="demo://items/{id}", name="item")]
    catalog = built(listed, templated)
    assert catalog.resource_candidates("demo://info") == [listed]
    assert catalog.resource_candidates("demo://items/7") == [templated]
    assert catalog.resource_candidates("other://x") == []
    assert catalog.upstreams_with_resources() == [templated, listed]  # by priority
