"""What code mode gives the code and what it gives the model, through a real gateway.

The gateway runs the governance test server inside it (a real MCP server) and the real bubblewrap
sandbox; every call goes through `Gateway.call_tool` as a client's would.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from mcp_nexus.gateway import Gateway
from mcp_nexus.pipeline.call import Caller
from mcp_nexus.pipeline.code_mode import NestedRunError
from support.gateway import running_gateway
from support.governance_gateway import document, embedded

CALLER = Caller("stdio", "desktop")


def _text(result: types.CallToolResult | types.InputRequiredResult) -> str:
    assert isinstance(result, types.CallToolResult)
    return "\n".join(item.text for item in result.content if isinstance(item, types.TextContent))


async def _sandbox(gateway: Gateway, code: str, caller: Caller = CALLER) -> types.CallToolResult:
    result = await gateway.call_tool("python_sandbox", {"code": code}, caller=caller)
    assert isinstance(result, types.CallToolResult)
    return result


@pytest.fixture
def config(tmp_path: Path) -> dict[str, Any]:
    return document(tmp_path / "offload", {"gov": embedded("gov")}, rate_limit=None)


async def test_the_description_says_how_to_call_tools_in_two_lines(config: dict[str, Any]) -> None:
    async with running_gateway(config) as gateway:
        tool = gateway.catalog.tools["python_sandbox"].tool
    lines = (tool.description or "").splitlines()
    assert lines[-2].startswith(
        'The code can call tools: call_tool("<tool name>", {...}) or tools.<namespace>.<tool>('
    )
    assert lines[-1].startswith('Example: code="lights = tools.home.list_lights(); return [')


async def test_results_come_as_data_and_errors_as_exceptions(config: dict[str, Any]) -> None:
    code = """
rows = call_tool("gov.big_list", {"items": 400})        # 400 records: offloaded for a model
obj = tools.gov.big_object(keys=3)                       # JSON text: decoded
text = tools.gov.big_text(lines=2)                       # not JSON: the text
structured = tools.gov.big_structured(items=2)           # structured content: as is
try:
    tools.gov.fail(reason="the disk is on fire")
except ToolError as error:
    failure = [error.kind, str(error)]
try:
    call_tool("gov.no_such_tool", {})
except ToolError as error:
    unknown = error.kind
try:
    tools.gov.stamp(wrong_argument=1)
except ToolError as error:
    invalid = error.kind
return {"rows": len(rows), "first": rows[0]["id"], "obj": sorted(obj), "text": text,
        "structured": structured, "failure": failure, "unknown": unknown, "invalid": invalid}
"""
    async with running_gateway(config) as gateway:
        result = await _sandbox(gateway, code)
    assert not result.is_error, _text(result)
    answer = json.loads(_text(result))
    assert answer["rows"] == 400 and answer["first"] == "switch.0"
    assert answer["obj"] == ["k0", "k1", "k2"]
    assert answer["text"] == "log line 0: something happened\nlog line 1: something happened"
    assert answer["structured"] == {"result": [{"id": 0, "value": 0}, {"id": 1, "value": 1}]}
    assert answer["failure"] == ["tool_error", "Error executing tool fail: the disk is on fire"]
    assert answer["unknown"] == "unknown_tool"
    assert answer["invalid"] == "invalid_arguments"
    assert result.meta is not None and result.meta["nexus/sandbox"]["tool_calls"] == 7


async def test_a_large_print_is_offloaded_like_any_result(config: dict[str, Any]) -> None:
    async with running_gateway(config) as gateway:
        result = await _sandbox(gateway, "for n in range(2000):\n    print('row', n)")
        text = _text(result)
        assert text.startswith("SYSTEM_ALERT: Data too large"), text[:200]
        name = re.search(r"tool_output_[0-9a-f-]+\.json", text)
        assert name, text[:300]
        # The model reads it the usual way: python_sandbox over the offloaded file.
        again = await _sandbox(gateway, f"print(open({name[0]!r}).read().splitlines()[-1])")
    assert _text(again).strip() == "row 1999"


async def test_stubs_carry_the_tools_descriptions_and_find_tools_the_call_form(
    config: dict[str, Any],
) -> None:
    code = """
hits = find_tools("device records")
return {"doc": tools.gov.stamp.__doc__.splitlines()[0], "namespaces": dir(tools),
        "hit": [h for h in hits if h["name"] == "gov.big_list"][0]["call"],
        "no_sandbox": all(h["name"] != "python_sandbox" for h in find_tools("run python code"))}
"""
    async with running_gateway(config) as gateway:
        result = await _sandbox(gateway, code)
    answer = json.loads(_text(result))
    assert answer["doc"].startswith("Answer with the key and how many calls this tool has had")
    assert answer["namespaces"] == ["gov"]
    assert answer["hit"] == "tools.gov.big_list(items=..., pad=...)"
    assert answer["no_sandbox"] is True


async def test_a_tool_hidden_from_the_caller_is_not_reachable_from_its_code(config: dict[str, Any]) -> None:
    hidden = Caller("xiaozhi", "speaker", sees=lambda name: None if name == "gov.stamp" else name)
    code = """
try:
    call_tool("gov.stamp", {"key": "k"})
except ToolError as error:
    print(error.kind)
print("stamp" in dir(tools.gov))
"""
    async with running_gateway(config) as gateway:
        result = await _sandbox(gateway, code, hidden)
    assert _text(result).splitlines() == ["unknown_tool", "False"]


async def test_the_call_bound_comes_from_the_config_and_is_named(tmp_path: Path) -> None:
    doc = document(tmp_path / "offload", {"gov": embedded("gov")}, rate_limit=None, sandbox_tool_calls=2)
    code = """
for n in range(3):
    try:
        tools.gov.stamp(key=str(n))
    except ToolError as error:
        print(n, error)
"""
    async with running_gateway(doc) as gateway:
        result = await _sandbox(gateway, code)
    assert _text(result).strip() == (
        "2 this run already made 2 tool calls, the most one run may make (setting sandbox_tool_calls)"
    )


async def test_the_api_runs_code_with_inputs_for_a_caller(config: dict[str, Any]) -> None:
    async with running_gateway(config) as gateway:
        mode = gateway.code_mode
        assert mode is not None
        run = await mode.run(
            "return {'echo': input['word'], 'stamp': tools.gov.stamp(key=input['word'])}",
            CALLER,
            inputs={"word": "hi"},
        )
        assert run.ok and run.returned, run.result.stderr
        assert run.value == {"echo": "hi", "stamp": "gov:hi:1"}
        assert run.tool_calls == 1
        calls = [c for c in gateway.metrics.recent.snapshot() if c["tool"] == "gov.stamp"]
        assert [(c["frontend"], c["client"], c["via"]) for c in calls] == [("stdio", "desktop", "sandbox")]
        nothing = await mode.run("print('no return')", CALLER)
        assert nothing.returned is False and nothing.result.stdout == "no return\n"


async def test_the_runner_refuses_to_start_inside_a_run(config: dict[str, Any]) -> None:
    async with running_gateway(config) as gateway:
        mode = gateway.code_mode
        assert mode is not None
        inside: list[str] = []

        async def nested() -> None:
            try:
                await mode.run("print(1)", CALLER)
            except NestedRunError as exc:
                inside.append(str(exc))

        original = mode.reach.call

        async def call_then_nest(name: str, arguments: dict[str, Any], caller: Caller) -> Any:
            await nested()
            return await original(name, arguments, caller)

        mode.reach = type(mode.reach)(
            call_then_nest,
            mode.reach.tools,
            mode.reach.search,
            mode.reach.read_offloaded,
            mode.reach.separator,
        )
        run = await mode.run("print(tools.gov.stamp(key='x'))", CALLER)
    assert run.result.stdout == "gov:x:1\n", run.result.stderr
    assert inside and "cannot start another python_sandbox run" in inside[0]
