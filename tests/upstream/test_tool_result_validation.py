"""The tagged validation of an upstream's tools/call result gives what the SDK's `model_validate` gives:
the same model for every result it accepts, the same error for every result it refuses."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest
from pydantic import ValidationError

from mcp_nexus.upstream import tool_result
from mcp_nexus.upstream.tool_result import read_call_tool_result, read_tool_outcome

TEXT = {"type": "text", "text": "hello"}
ANNOTATED = {
    "type": "text",
    "text": "hi",
    "annotations": {"audience": ["user"], "priority": 1},
    "_meta": {"k": 1},
}
IMAGE = {"type": "image", "data": "aGk=", "mimeType": "image/png"}
AUDIO = {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"}
LINK = {"type": "resource_link", "uri": "file:///a.txt", "name": "a", "icons": [{"src": "https://x/i.png"}]}
EMBEDDED_TEXT = {"type": "resource", "resource": {"uri": "file:///a", "text": "body"}}
EMBEDDED_BLOB = {"type": "resource", "resource": {"uri": "file:///b", "blob": "aGk=", "mimeType": "x/y"}}

ACCEPTED: list[dict[str, Any]] = [
    {"content": []},
    {"content": [TEXT]},
    {"content": [TEXT, ANNOTATED, IMAGE, AUDIO, LINK, EMBEDDED_TEXT, EMBEDDED_BLOB]},
    {
        "content": [TEXT],
        "isError": False,
        "resultType": "complete",
        "structuredContent": {"result": "hello"},
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "up", "version": ""}},
    },
    {"content": [TEXT], "isError": True, "structuredContent": [1, "two", None]},
    {"content": [TEXT], "unknownField": {"ignored": True}},  # extra fields: dropped alike
    {"content": [TEXT], "resultType": "an-extension-tag"},  # open vocabulary: kept alike
    {"content": [{"text": "no type: the smart union reads it as text"}]},
    {"content": [{"data": "aGk=", "mimeType": "image/png"}]},  # no type: read as an image by its fields
    {"content": [{"type": "text", "text": "coerced priority", "annotations": {"priority": "0.5"}}]},
]

REFUSED: list[Any] = [
    {},  # no content
    {"content": None},
    {"content": "text"},
    {"content": [{"type": "text"}]},  # text missing
    {"content": [{"type": "text", "text": 5}]},
    {"content": [{"type": "video", "url": "x"}]},  # no such content type
    {"content": [{"type": 7, "text": "x"}]},
    {"content": [TEXT, "not an object"]},
    {"content": [IMAGE | {"mimeType": None}]},
    {"content": [TEXT], "isError": "maybe"},
    {"content": [TEXT], "_meta": "not an object"},
    {"content": [EMBEDDED_TEXT | {"resource": {"uri": "file:///a"}}]},  # neither text nor blob
]


def test_the_tagged_validator_is_in_use() -> None:
    # Without it every result would silently take the SDK's slower path and the tests below prove nothing.
    assert tool_result._TAGGED is not None


@pytest.mark.parametrize("raw", ACCEPTED)
def test_an_accepted_result_is_the_sdks_model(raw: dict[str, Any]) -> None:
    expected = types.CallToolResult.model_validate(raw, by_name=False)
    got = read_call_tool_result(raw)
    assert type(got) is types.CallToolResult
    assert got == expected
    assert got.model_fields_set == expected.model_fields_set
    assert [type(item) for item in got.content] == [type(item) for item in expected.content]
    assert got.model_dump_json(by_alias=True, exclude_none=True) == expected.model_dump_json(
        by_alias=True, exclude_none=True
    )


@pytest.mark.parametrize("raw", REFUSED)
def test_a_refused_result_raises_the_sdks_error(raw: Any) -> None:
    with pytest.raises(ValidationError) as sdk:
        types.CallToolResult.model_validate(raw, by_name=False)
    with pytest.raises(ValidationError) as ours:
        read_call_tool_result(raw)
    assert ours.value.errors(include_url=False) == sdk.value.errors(include_url=False)


def test_an_input_request_is_read_as_one() -> None:
    raw = {
        "resultType": "input_required",
        "inputRequests": {"q": {"method": "roots/list"}},
        "requestState": "s1",
    }
    outcome = read_tool_outcome(raw)
    assert isinstance(outcome, types.InputRequiredResult)
    assert outcome == types.InputRequiredResult.model_validate(raw, by_name=False)
    assert isinstance(read_tool_outcome({"content": [TEXT]}), types.CallToolResult)
