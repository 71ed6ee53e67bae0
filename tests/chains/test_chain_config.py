"""`chains:` in the config: what is checked at load, each error naming the chain and the field."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_nexus.catalog.tool_admission import GATEWAY_TOOL_NAMES
from mcp_nexus.config.chains import RESERVED_NAMES, RESERVED_PREFIX
from mcp_nexus.config.errors import ConfigError
from mcp_nexus.config.load import config_from_document
from mcp_nexus.config.schema import NexusConfig

SCHEMA = {"type": "object", "properties": {"repo": {"type": "string"}}}


def load(chains: dict[str, Any]) -> NexusConfig:
    config, _warnings = config_from_document({"gateway": {"include_builtins": False}, "chains": chains})
    return config


def problems(chains: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        load(chains)
    return str(caught.value)


def chain(*steps: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"description": "d", "input_schema": SCHEMA, "steps": list(steps), **extra}


def test_a_chain_loads_with_its_steps_ids_and_governance() -> None:
    config = load(
        {
            "git.latest": chain(
                {"id": "log", "tool": "git.git_log", "arguments": {"repo_path": "{{ input.repo }}"}},
                {"tool": "git.git_show", "arguments": {"revision": "{{ steps.log.0.hash }}"}},
                result="{{ steps.step2 }}",
                tool_config={"cache_ttl": 30, "rate_limit": "2/second"},
            )
        }
    )
    loaded = config.chains["git.latest"]
    assert loaded.step_ids() == ["log", "step2"]
    assert loaded.tool_config == {"cache_ttl": 30, "rate_limit": "2/second"}


@pytest.mark.parametrize(
    ("chains", "expected"),
    [
        (
            {
                "c": chain(
                    {"tool": "t", "arguments": {"x": "{{ steps.later }}"}}, {"id": "later", "tool": "t"}
                )
            },
            "chains.c: steps[0].arguments.x: {{ steps.later }} names step 'later', which does not run before it (earlier steps: none yet)",
        ),
        (
            {"c": chain({"tool": "t", "arguments": {"x": "{{ input.rpo }}"}})},
            "chains.c: steps[0].arguments.x: {{ input.rpo }}: the input schema has no property 'rpo' (it declares: repo)",
        ),
        (
            {"c": chain({"tool": "t", "id": "s"}, {"tool": "t", "id": "s"})},
            "chains.c: steps[1].id: 's' is already the id of steps[0]",
        ),
        ({"c": chain({"tool": "t", "id": "2nd"})}, "chains.c: steps[0].id: '2nd' is not an id"),
        (
            {"c": {"description": "d"}},
            "chains.c: a chain needs 'steps' (a list of tool calls) or 'code' (a Python body): exactly one of them",
        ),
        ({"c": chain({"tool": "t"}, code="print(1)")}, "exactly one of them"),
        ({"c": chain({"tool": ""})}, "chains.c.steps[0].tool: String should have at least 1 character"),
        (
            {"c": chain({"tool": "t", "argument": {}})},
            "chains.c.steps[0].argument: unknown field; did you mean 'arguments'?",
        ),
        (
            {"c": chain({"tool": "t"}, result="{{ steps.nope }}")},
            "chains.c: result: {{ steps.nope }} names step 'nope'",
        ),
        (
            {"c": chain({"tool": "t"}, input_schema={"type": "string"})},
            "'input_schema' must describe an object",
        ),
        (
            {"c": chain({"tool": "t"}, tool_config={"rate_limit": "often"})},
            "chain 'c': tool_config.rate_limit: expected a rate such as",
        ),
        (
            {"c": chain({"tool": "t"}, tool_config={"cache": 5})},
            "chain 'c': tool_config.cache: unknown field",
        ),
        ({"bad name": chain({"tool": "t"})}, "chain 'bad name': a chain's name is its tool name"),
        ({"nexus.mine": chain({"tool": "t"})}, "chain 'nexus.mine': that name is the gateway's own"),
        ({"find_tools": chain({"tool": "t"})}, "chain 'find_tools': that name is the gateway's own"),
    ],
)
def test_a_bad_chain_is_refused_naming_the_chain_and_field(chains: dict[str, Any], expected: str) -> None:
    assert expected in problems(chains)


def test_chains_calling_each_other_in_a_cycle_are_refused() -> None:
    message = problems(
        {
            "a": chain({"tool": "b"}),
            "b": chain({"tool": "t"}, {"tool": "c"}),
            "c": chain({"tool": "a"}),
            "ok": chain({"tool": "a"}),  # calling into the cycle is fine; the cycle is what is named
        }
    )
    assert "chains a -> b -> c -> a call each other in a cycle" in message
    assert "never itself again" in problems({"self": chain({"tool": "self"})})


def test_a_chain_may_call_another_chain() -> None:
    config = load({"inner": chain({"tool": "t"}), "outer": chain({"tool": "inner"}, {"tool": "inner"})})
    assert set(config.chains) == {"inner", "outer"}


def test_the_reserved_names_are_the_gateways_own_tools() -> None:
    assert {n for n in GATEWAY_TOOL_NAMES if not n.startswith(RESERVED_PREFIX)} == RESERVED_NAMES
