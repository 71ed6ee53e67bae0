"""An MCP server implementing every fixture the official conformance suite calls.

The suite (npm `@modelcontextprotocol/conformance`, `conformance server --url ...`)
drives a server through fixed tools (`test_simple_text`, ...), resources
(`test://static-text`, ...) and prompts (`test_simple_prompt`, ...). This module
serves all of them with the official SDK's low-level `Server`, for both protocol
eras: the 2025-11-25 handshake (server-initiated sampling/elicitation over the
request's back channel) and 2026-07-28 stateless (the same needs expressed as
`InputRequiredResult` rounds).

Run it over streamable HTTP (`--port N`, endpoint `http://127.0.0.1:N/mcp`) or over
stdio (`--stdio`), e.g. as a bare-named upstream behind a gateway.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import sys
import warnings
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.caching import CacheableMethod, CacheHint
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.models import InitializationOptions
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.subscriptions import PromptsListChanged, ToolsListChanged
from mcp_types.jsonrpc import INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

SERVER_NAME = "nexus-conformance-fixture"
SERVER_VERSION = "1.0.0"

# A 1x1 red PNG and a minimal WAV, the payloads the suite expects for image/audio fixtures.
TEST_IMAGE_BASE64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
TEST_AUDIO_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

LOG_LEVELS: tuple[types.LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)

# The SEP-1613/SEP-2106 schema of `json_schema_2020_12_tool`, kept verbatim: the suite checks
# that `$schema`, `$defs`, `$anchor`, composition and conditional keywords survive tools/list.
JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}

JsonObject = dict[str, Any]
Context = ServerRequestContext[Any, Any]


# ---------------------------------------------------------------------------------------------
# Interactive steps: one description of "what input do I still need", two ways to get it.
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NeedsInput:
    """A step cannot finish yet: the client must answer `requests` (keyed) first."""

    requests: dict[str, JsonObject]
    state: str | None = None


@dataclass(frozen=True)
class StepInput:
    """What a step sees: answers gathered so far, its own echoed state, the caller's capabilities."""

    arguments: Mapping[str, Any]
    responses: Mapping[str, JsonObject]
    state: str | None
    client_capabilities: JsonObject


Step = Callable[[StepInput], Awaitable[JsonObject | NeedsInput]]


def elicitation_request(message: str, properties: JsonObject, required: list[str]) -> JsonObject:
    schema: JsonObject = {"type": "object", "properties": properties, "required": required}
    return {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": schema},
    }


def sampling_request(prompt: str, max_tokens: int = 100) -> JsonObject:
    message = {"role": "user", "content": {"type": "text", "text": prompt}}
    return {"method": "sampling/createMessage", "params": {"messages": [message], "maxTokens": max_tokens}}


ROOTS_REQUEST: JsonObject = {"method": "roots/list", "params": {}}

# The typed request/result pair for each method a step may ask the client for, used on the
# handshake era where the SDK sends the request over the tools/call back channel.
_BACK_CHANNEL_TYPES: dict[str, tuple[Any, Any]] = {
    "elicitation/create": (types.ElicitRequest, types.ElicitResult),
    "sampling/createMessage": (types.CreateMessageRequest, types.CreateMessageResult),
    "roots/list": (types.ListRootsRequest, types.ListRootsResult),
}


def text_result(text: str, *, is_error: bool = False) -> JsonObject:
    result: JsonObject = {"content": [{"type": "text", "text": text}]}
    if is_error:
        result["isError"] = True
    return result


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def is_modern(ctx: Context) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def client_capabilities(ctx: Context) -> JsonObject:
    declared = ctx.session.client_capabilities
    return declared.model_dump(by_alias=True, mode="json", exclude_none=True) if declared else {}


def dump_responses(responses: Mapping[str, Any] | None) -> dict[str, JsonObject]:
    if not responses:
        return {}
    return {
        key: value.model_dump(by_alias=True, mode="json", exclude_none=True)
        for key, value in responses.items()
    }


async def ask_over_back_channel(ctx: Context, request: JsonObject) -> JsonObject:
    """Send one input request to a handshake-era client on this request's stream."""
    request_type, result_type = _BACK_CHANNEL_TYPES[request["method"]]
    result = await ctx.session.send_request(
        request_type.model_validate(request),
        result_type,
        request_read_timeout_seconds=30,
        metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
    )
    dumped: JsonObject = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


async def run_step(
    ctx: Context,
    step: Step,
    arguments: Mapping[str, Any],
    responses: Mapping[str, Any] | None,
    state: str | None,
) -> JsonObject:
    """Drive `step` to a result in whichever era the caller speaks.

    2026-07-28: one round per request; unmet needs go back as an `InputRequiredResult`
    (the SDK's `RequestStateBoundary` seals `requestState`). Handshake era: the needs are
    asked over the back channel and the step re-run in place, at most a few rounds.
    """
    gathered = dump_responses(responses)
    capabilities = client_capabilities(ctx)
    if is_modern(ctx):
        outcome = await step(StepInput(arguments, gathered, state, capabilities))
        if isinstance(outcome, NeedsInput):
            result: JsonObject = {"resultType": "input_required", "inputRequests": outcome.requests}
            if outcome.state is not None:
                result["requestState"] = outcome.state
            return result
        return outcome
    for _ in range(5):
        outcome = await step(StepInput(arguments, gathered, state, capabilities))
        if not isinstance(outcome, NeedsInput):
            return outcome
        for key, request in outcome.requests.items():
            gathered[key] = await ask_over_back_channel(ctx, request)
        state = outcome.state
    raise MCPError(INVALID_PARAMS, "Input rounds did not converge")


def accepted_content(response: JsonObject | None) -> JsonObject | None:
    """The form content of an accepted elicitation answer, or None."""
    if response is None or response.get("action") != "accept":
        return None
    content = response.get("content")
    return content if isinstance(content, dict) else None


def elicitation_summary(prefix: str, response: JsonObject) -> JsonObject:
    action = response.get("action", "cancel")
    return text_result(f"{prefix}: action={action}, content={compact(response.get('content') or {})}")


# ---------------------------------------------------------------------------------------------
# Steps for the interactive tools and prompts.
# ---------------------------------------------------------------------------------------------


async def sampling_step(given: StepInput) -> JsonObject | NeedsInput:
    answer = given.responses.get("llm_response")
    if answer is None:
        return NeedsInput({"llm_response": sampling_request(str(given.arguments.get("prompt", "")))})
    content = answer.get("content")
    text = content.get("text") if isinstance(content, dict) else None
    return text_result(f"LLM response: {text or 'No response'}")


async def elicitation_step(given: StepInput) -> JsonObject | NeedsInput:
    answer = given.responses.get("user_response")
    if answer is None:
        properties = {"response": {"type": "string", "description": "User's response"}}
        message = str(given.arguments.get("message", "Please respond"))
        return NeedsInput({"user_response": elicitation_request(message, properties, ["response"])})
    return elicitation_summary("User response", answer)


SEP1034_PROPERTIES: JsonObject = {
    "name": {"type": "string", "description": "User name", "default": "John Doe"},
    "age": {"type": "integer", "description": "User age", "default": 30},
    "score": {"type": "number", "description": "User score", "default": 95.5},
    "status": {
        "type": "string",
        "description": "User status",
        "enum": ["active", "inactive", "pending"],
        "default": "active",
    },
    "verified": {"type": "boolean", "description": "Verification status", "default": True},
}

SEP1330_PROPERTIES: JsonObject = {
    "untitledSingle": {
        "type": "string",
        "description": "Untitled single-select",
        "enum": ["option1", "option2", "option3"],
    },
    "titledSingle": {
        "type": "string",
        "description": "Titled single-select",
        "oneOf": [
            {"const": "value1", "title": "First Option"},
            {"const": "value2", "title": "Second Option"},
            {"const": "value3", "title": "Third Option"},
        ],
    },
    "legacyEnum": {
        "type": "string",
        "description": "Legacy titled enum",
        "enum": ["opt1", "opt2", "opt3"],
        "enumNames": ["Option One", "Option Two", "Option Three"],
    },
    "untitledMulti": {
        "type": "array",
        "description": "Untitled multi-select",
        "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
    },
    "titledMulti": {
        "type": "array",
        "description": "Titled multi-select",
        "items": {
            "anyOf": [
                {"const": "value1", "title": "First Choice"},
                {"const": "value2", "title": "Second Choice"},
                {"const": "value3", "title": "Third Choice"},
            ]
        },
    },
}


def form_step(key: str, message: str, properties: JsonObject, summary_prefix: str) -> Step:
    """A step asking one form (no required fields) and summarising the answer."""

    async def step(given: StepInput) -> JsonObject | NeedsInput:
        answer = given.responses.get(key)
        if answer is None:
            return NeedsInput({key: elicitation_request(message, properties, [])})
        return elicitation_summary(summary_prefix, answer)

    return step


NAME_FORM = elicitation_request("What is your name?", {"name": {"type": "string"}}, ["name"])


async def user_name_step(given: StepInput) -> JsonObject | NeedsInput:
    content = accepted_content(given.responses.get("user_name"))
    if content is None or "name" not in content:
        # A missing or wrong key is re-requested rather than rejected (SEP-2322 SHOULD).
        return NeedsInput({"user_name": NAME_FORM})
    return text_result(f"Hello, {content['name']}!")


async def capital_question_step(given: StepInput) -> JsonObject | NeedsInput:
    answer = given.responses.get("capital_question")
    if answer is None:
        return NeedsInput({"capital_question": sampling_request("What is the capital of France?")})
    content = answer.get("content")
    text = content.get("text") if isinstance(content, dict) else None
    return text_result(f"Sampling result: {text or 'no response'}")


async def client_roots_step(given: StepInput) -> JsonObject | NeedsInput:
    answer = given.responses.get("client_roots")
    if answer is None:
        return NeedsInput({"client_roots": ROOTS_REQUEST})
    roots = answer.get("roots") or []
    uris = ", ".join(str(root.get("uri")) for root in roots if isinstance(root, dict))
    return text_result(f"Found {len(roots)} root(s): {uris}")


CONFIRM_FORM = elicitation_request("Please confirm", {"ok": {"type": "boolean"}}, ["ok"])


def confirm_with_state_step(state_token: str) -> Step:
    """Ask for a confirmation carrying `state_token` as requestState; finish only when it comes back."""

    async def step(given: StepInput) -> JsonObject | NeedsInput:
        if given.state != state_token or "confirm" not in given.responses:
            return NeedsInput({"confirm": CONFIRM_FORM}, state=state_token)
        return text_result(f"state-ok: confirmed={compact(accepted_content(given.responses['confirm']))}")

    return step


async def multiple_inputs_step(given: StepInput) -> JsonObject | NeedsInput:
    needed = {
        "user_name": NAME_FORM,
        "greeting": sampling_request("Generate a greeting", max_tokens=50),
        "client_roots": ROOTS_REQUEST,
    }
    missing = {key: request for key, request in needed.items() if key not in given.responses}
    if missing or given.state != "multiple-inputs":
        return NeedsInput(missing or needed, state="multiple-inputs")
    name = (accepted_content(given.responses["user_name"]) or {}).get("name")
    return text_result(f"All inputs received for {name}")


async def multi_round_step(given: StepInput) -> JsonObject | NeedsInput:
    step1 = elicitation_request("Step 1: What is your name?", {"name": {"type": "string"}}, ["name"])
    step2 = elicitation_request(
        "Step 2: What is your favorite color?", {"color": {"type": "string"}}, ["color"]
    )
    if given.state is None:
        return NeedsInput({"step1": step1}, state=compact({"round": 1}))
    round_state = json.loads(given.state)
    if round_state.get("round") == 1:
        name = (accepted_content(given.responses.get("step1")) or {}).get("name")
        if name is None:
            return NeedsInput({"step1": step1}, state=given.state)
        return NeedsInput({"step2": step2}, state=compact({"round": 2, "name": name}))
    color = (accepted_content(given.responses.get("step2")) or {}).get("color")
    if color is None:
        return NeedsInput({"step2": step2}, state=given.state)
    return text_result(f"{round_state.get('name')} likes {color}")


async def capability_aware_step(given: StepInput) -> JsonObject | NeedsInput:
    """Ask only for what the caller declared it can answer (SEP-2322 capability check)."""
    offered: dict[str, JsonObject] = {}
    if "sampling" in given.client_capabilities:
        offered["capital_question"] = sampling_request("What is the capital of France?")
    if "elicitation" in given.client_capabilities:
        offered["user_name"] = NAME_FORM
    if "roots" in given.client_capabilities:
        offered["client_roots"] = ROOTS_REQUEST
    if not offered:
        raise MCPError(
            MISSING_REQUIRED_CLIENT_CAPABILITY,
            "Client declared none of sampling, elicitation, roots",
            data={"requiredCapabilities": {"sampling": {}}},
        )
    if all(key in given.responses for key in offered):
        return text_result(f"Answered: {', '.join(sorted(offered))}")
    return NeedsInput({key: request for key, request in offered.items() if key not in given.responses})


async def prompt_context_step(given: StepInput) -> JsonObject | NeedsInput:
    content = accepted_content(given.responses.get("user_context"))
    if content is None or "context" not in content:
        form = elicitation_request(
            "What context should the prompt use?", {"context": {"type": "string"}}, ["context"]
        )
        return NeedsInput({"user_context": form})
    text = f"Prompt built with context: {content['context']}"
    return {"messages": [{"role": "user", "content": {"type": "text", "text": text}}]}


# ---------------------------------------------------------------------------------------------
# Resumability store for SSE polling (SEP-1699).
# ---------------------------------------------------------------------------------------------


class InMemoryEventStore(EventStore):
    """Keeps every SSE event so a client reconnecting with Last-Event-ID gets the rest."""

    def __init__(self) -> None:
        self._events: list[tuple[StreamId, EventId, types.JSONRPCMessage | None]] = []
        self._ids = itertools.count(1)

    async def store_event(self, stream_id: StreamId, message: types.JSONRPCMessage | None) -> EventId:
        event_id = str(next(self._ids))
        self._events.append((stream_id, event_id, message))
        return event_id

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        stream_id = next((sid for sid, eid, _ in self._events if eid == last_event_id), None)
        if stream_id is None:
            return None
        for sid, eid, message in self._events:
            if sid == stream_id and int(eid) > int(last_event_id) and message is not None:
                await send_callback(EventMessage(message, eid))
        return stream_id


# ---------------------------------------------------------------------------------------------
# The fixture: tools, resources, prompts and their handlers.
# ---------------------------------------------------------------------------------------------

ToolHandler = Callable[[Context, types.CallToolRequestParams], Awaitable[JsonObject]]


@dataclass(frozen=True)
class FixtureTool:
    """One tool as listed (raw JSON schema, kept verbatim) plus the coroutine that runs it."""

    name: str
    description: str
    handler: ToolHandler
    input_schema: JsonObject = field(default_factory=lambda: dict(NO_ARGUMENTS))

    def listing(self) -> JsonObject:
        return {"name": self.name, "description": self.description, "inputSchema": self.input_schema}


@dataclass(frozen=True)
class FixturePrompt:
    """One prompt: its listing and a step producing the messages (possibly after input rounds)."""

    name: str
    description: str
    step: Step
    arguments: tuple[tuple[str, str], ...] = ()

    def listing(self) -> JsonObject:
        listed: JsonObject = {"name": self.name, "description": self.description}
        if self.arguments:
            listed["arguments"] = [
                {"name": name, "description": description, "required": True}
                for name, description in self.arguments
            ]
        return listed


def messages(*contents: JsonObject) -> JsonObject:
    return {"messages": [{"role": "user", "content": content} for content in contents]}


def fixed(result: JsonObject) -> Step:
    async def step(given: StepInput) -> JsonObject | NeedsInput:
        return result

    return step


class ConformanceFixture:
    """State and handlers of the fixture server (one instance per server process)."""

    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self.log_level: types.LoggingLevel = "debug"
        self.subscribed_uris: set[str] = set()
        # Toggled by the trigger tools so list_changed notifications describe a real change.
        self.extra_tool_listed = False
        self.extra_prompt_listed = False
        self.tools = {tool.name: tool for tool in self._tools()}
        self.prompts = {prompt.name: prompt for prompt in self._prompts()}

    # -- tools ----------------------------------------------------------------------------------

    def _tools(self) -> list[FixtureTool]:
        def interactive(step: Step) -> ToolHandler:
            async def handler(ctx: Context, params: types.CallToolRequestParams) -> JsonObject:
                return await run_step(
                    ctx, step, params.arguments or {}, params.input_responses, params.request_state
                )

            return handler

        def constant(result: JsonObject) -> ToolHandler:
            async def handler(ctx: Context, params: types.CallToolRequestParams) -> JsonObject:
                return result

            return handler

        return [
            FixtureTool(
                "test_simple_text",
                "Tests simple text content response",
                constant(text_result("This is a simple text response for testing.")),
            ),
            FixtureTool(
                "test_image_content",
                "Tests image content response",
                constant(
                    {"content": [{"type": "image", "data": TEST_IMAGE_BASE64, "mimeType": "image/png"}]}
                ),
            ),
            FixtureTool(
                "test_audio_content",
                "Tests audio content response",
                constant(
                    {"content": [{"type": "audio", "data": TEST_AUDIO_BASE64, "mimeType": "audio/wav"}]}
                ),
            ),
            FixtureTool(
                "test_embedded_resource",
                "Tests embedded resource content response",
                constant(
                    {
                        "content": [
                            {
                                "type": "resource",
                                "resource": {
                                    "uri": "test://embedded-resource",
                                    "mimeType": "text/plain",
                                    "text": "This is an embedded resource content.",
                                },
                            }
                        ]
                    }
                ),
            ),
            FixtureTool(
                "test_multiple_content_types",
                "Tests response with multiple content types (text, image, resource)",
                constant(
                    {
                        "content": [
                            {"type": "text", "text": "Multiple content types test:"},
                            {"type": "image", "data": TEST_IMAGE_BASE64, "mimeType": "image/png"},
                            {
                                "type": "resource",
                                "resource": {
                                    "uri": "test://mixed-content-resource",
                                    "mimeType": "application/json",
                                    "text": compact({"test": "data", "value": 123}),
                                },
                            },
                        ]
                    }
                ),
            ),
            FixtureTool(
                "test_tool_with_logging",
                "Tests tool that emits log messages during execution",
                self._logging_tool,
            ),
            FixtureTool(
                "test_logging_tool",
                "Emits log messages; on 2026-07-28 only when the request opted in via _meta logLevel",
                self._logging_tool,
            ),
            FixtureTool(
                "test_tool_with_progress", "Tests tool that reports progress notifications", self._progress
            ),
            FixtureTool(
                "test_error_handling",
                "Tests error response handling",
                constant(text_result("This tool intentionally returns an error for testing", is_error=True)),
            ),
            FixtureTool(
                "test_reconnection",
                "Closes the SSE stream mid-call and answers after the client reconnects (SEP-1699)",
                self._reconnection,
            ),
            FixtureTool(
                "test_sampling",
                "Tests server-initiated sampling (LLM completion request)",
                interactive(sampling_step),
                {
                    "type": "object",
                    "properties": {
                        "prompt": {"type": "string", "description": "The prompt to send to the LLM"}
                    },
                    "required": ["prompt"],
                },
            ),
            FixtureTool(
                "test_elicitation",
                "Tests server-initiated elicitation (user input request)",
                interactive(elicitation_step),
                {
                    "type": "object",
                    "properties": {
                        "message": {"type": "string", "description": "The message to show the user"}
                    },
                    "required": ["message"],
                },
            ),
            FixtureTool(
                "test_elicitation_sep1034_defaults",
                "Tests elicitation with default values per SEP-1034",
                interactive(
                    form_step(
                        "defaults",
                        "Please review and update the form fields with defaults",
                        SEP1034_PROPERTIES,
                        "Elicitation completed",
                    )
                ),
            ),
            FixtureTool(
                "test_elicitation_sep1330_enums",
                "Tests elicitation with enum schema variants per SEP-1330",
                interactive(
                    form_step(
                        "enums",
                        "Please select values using different enum schema types",
                        SEP1330_PROPERTIES,
                        "Elicitation completed",
                    )
                ),
            ),
            FixtureTool(
                "test_streaming_elicitation",
                "Needs an elicitation answer before completing (in-band on 2026-07-28)",
                interactive(user_name_step),
            ),
            FixtureTool(
                "test_missing_capability",
                "Requires the sampling client capability; rejects callers that did not declare it",
                self._missing_capability,
            ),
            FixtureTool(
                "json_schema_2020_12_tool",
                "Tool with JSON Schema 2020-12 features",
                self._echo_arguments,
                JSON_SCHEMA_2020_12,
            ),
            FixtureTool(
                "test_header_param",
                "Echoes its region argument, mirrored in the Mcp-Param-Region header (SEP-2243)",
                self._echo_arguments,
                {
                    "type": "object",
                    "properties": {
                        "region": {"type": "string", "description": "Region", "x-mcp-header": "Region"},
                        "query": {"type": "string", "description": "Not mirrored in a header"},
                    },
                    "required": ["region"],
                },
            ),
            FixtureTool(
                "test_trigger_tool_change",
                "Toggles test_added_tool and announces that the tool list changed",
                self._trigger_tool_change,
            ),
            FixtureTool(
                "test_trigger_prompt_change",
                "Toggles test_added_prompt and announces that the prompt list changed",
                self._trigger_prompt_change,
            ),
            FixtureTool(
                "test_input_required_result_elicitation",
                "SEP-2322: asks the caller's name via an in-band elicitation",
                interactive(user_name_step),
            ),
            FixtureTool(
                "test_input_required_result_sampling",
                "SEP-2322: asks for an LLM completion via an in-band sampling request",
                interactive(capital_question_step),
            ),
            FixtureTool(
                "test_input_required_result_list_roots",
                "SEP-2322: asks for the client's roots in-band",
                interactive(client_roots_step),
            ),
            FixtureTool(
                "test_input_required_result_request_state",
                "SEP-2322: round-trips an opaque requestState",
                interactive(confirm_with_state_step("request-state")),
            ),
            FixtureTool(
                "test_input_required_result_multiple_inputs",
                "SEP-2322: asks for elicitation, sampling and roots at once",
                interactive(multiple_inputs_step),
            ),
            FixtureTool(
                "test_input_required_result_multi_round",
                "SEP-2322: two input rounds with evolving requestState",
                interactive(multi_round_step),
            ),
            FixtureTool(
                "test_input_required_result_tampered_state",
                "SEP-2322: integrity-protected requestState; tampering is rejected",
                interactive(confirm_with_state_step("tamper-proof")),
            ),
            FixtureTool(
                "test_input_required_result_capabilities",
                "SEP-2322: asks only for inputs the client declared it can provide",
                interactive(capability_aware_step),
            ),
            FixtureTool(
                "test_added_tool",
                "Appears after test_trigger_tool_change",
                constant(text_result("Added tool called")),
                {"type": "object", "properties": {"note": {"type": "string"}}},
            ),
        ]

    def listed_tools(self) -> list[JsonObject]:
        return [
            tool.listing()
            for tool in self.tools.values()
            if tool.name != "test_added_tool" or self.extra_tool_listed
        ]

    async def list_tools(self, ctx: Context, params: types.PaginatedRequestParams | None) -> JsonObject:
        return {"tools": self.listed_tools()}

    async def call_tool(self, ctx: Context, params: types.CallToolRequestParams) -> JsonObject:
        tool = self.tools.get(params.name)
        if tool is None or (tool.name == "test_added_tool" and not self.extra_tool_listed):
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {params.name}")
        return await tool.handler(ctx, params)

    async def _log(self, ctx: Context, level: types.LoggingLevel, message: str) -> None:
        if LOG_LEVELS.index(level) < LOG_LEVELS.index(self.log_level):
            return
        # On 2026-07-28 the session itself drops entries the request did not opt into.
        await ctx.session.send_log_message(
            level,
            message,
            logger="conformance-fixture",
            related_request_id=ctx.request_id,
        )

    async def _logging_tool(self, ctx: Context, params: types.CallToolRequestParams) -> JsonObject:
        await self._log(ctx, "info", "Tool execution started")
        await anyio.sleep(0.05)
        await self._log(ctx, "info", "Tool processing data")
        await anyio.sleep(0.05)
        await self._log(ctx, "info", "Tool execution completed")
        return text_result("Tool with logging executed successfully")

    async def _progress(self, ctx: Context, params: types.CallToolRequestParams) -> JsonObject:
        for step in (0, 50, 100):
            await ctx.session.report_progress(step, 100, f"Completed step {step} of 100")
            if step < 100:
                await anyio.sleep(0.05)
        token = progress_token_from_params(ctx.params)
        return text_result(str(token if token is not None else 0))

    async def _reconnection(self, ctx: Context, params: types.CallToolRequestParams) -> JsonObject:
        await self._log(ctx, "info", "Before disconnect")
        if ctx.close_sse_stream is not None:
            await ctx.close_sse_stream()
        # Give the client time to reconnect (it honours the retry interval we set).
        await anyio.sleep(0.2)
        return text_result("Reconnection test completed")

    async def _missing_capability(self, ctx: Context, params: types.CallToolRequestParams) -> JsonObject:
        if "sampling" not in client_capabilities(ctx):
            raise MCPError(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                "This tool needs the sampling capability, which the client did not declare",
                data={"requiredCapabilities": {"sampling": {}}},
            )
        return text_result("Client declared sampling")

    async def _echo_arguments(self, ctx: Context, params: types.CallToolRequestParams) -> JsonObject:
        return text_result(compact(params.arguments or {}))

    async def _trigger_tool_change(self, ctx: Context, params: types.CallToolRequestParams) -> JsonObject:
        self.extra_tool_listed = not self.extra_tool_listed
        await self.bus.publish(ToolsListChanged())
        if not is_modern(ctx):
            await ctx.session.send_tool_list_changed()
        return text_result(f"test_added_tool listed: {self.extra_tool_listed}")

    async def _trigger_prompt_change(self, ctx: Context, params: types.CallToolRequestParams) -> JsonObject:
        self.extra_prompt_listed = not self.extra_prompt_listed
        await self.bus.publish(PromptsListChanged())
        if not is_modern(ctx):
            await ctx.session.send_prompt_list_changed()
        return text_result(f"test_added_prompt listed: {self.extra_prompt_listed}")

    # -- prompts --------------------------------------------------------------------------------

    def _prompts(self) -> list[FixturePrompt]:
        return [
            FixturePrompt(
                "test_simple_prompt",
                "A simple prompt without arguments",
                fixed(messages({"type": "text", "text": "This is a simple prompt for testing."})),
            ),
            FixturePrompt(
                "test_prompt_with_arguments",
                "A prompt with required arguments",
                self._prompt_with_arguments,
                (("arg1", "First test argument"), ("arg2", "Second test argument")),
            ),
            FixturePrompt(
                "test_prompt_with_embedded_resource",
                "A prompt that includes an embedded resource",
                self._prompt_with_embedded_resource,
                (("resourceUri", "URI of the resource to embed"),),
            ),
            FixturePrompt(
                "test_prompt_with_image",
                "A prompt that includes image content",
                fixed(
                    messages(
                        {"type": "image", "data": TEST_IMAGE_BASE64, "mimeType": "image/png"},
                        {"type": "text", "text": "Please analyze the image above."},
                    )
                ),
            ),
            FixturePrompt(
                "test_input_required_result_prompt",
                "SEP-2322: needs context from the user before rendering",
                prompt_context_step,
            ),
            FixturePrompt(
                "test_added_prompt",
                "Appears after test_trigger_prompt_change",
                fixed(messages({"type": "text", "text": "Added prompt"})),
            ),
        ]

    @staticmethod
    async def _prompt_with_arguments(given: StepInput) -> JsonObject | NeedsInput:
        arg1, arg2 = given.arguments.get("arg1"), given.arguments.get("arg2")
        return messages({"type": "text", "text": f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"})

    @staticmethod
    async def _prompt_with_embedded_resource(given: StepInput) -> JsonObject | NeedsInput:
        resource = {
            "uri": given.arguments.get("resourceUri", "test://example-resource"),
            "mimeType": "text/plain",
            "text": "Embedded resource content for testing.",
        }
        return messages(
            {"type": "resource", "resource": resource},
            {"type": "text", "text": "Please process the embedded resource above."},
        )

    async def list_prompts(self, ctx: Context, params: types.PaginatedRequestParams | None) -> JsonObject:
        listed = [
            p for p in self.prompts.values() if p.name != "test_added_prompt" or self.extra_prompt_listed
        ]
        return {"prompts": [prompt.listing() for prompt in listed]}

    async def get_prompt(self, ctx: Context, params: types.GetPromptRequestParams) -> JsonObject:
        prompt = self.prompts.get(params.name)
        if prompt is None or (prompt.name == "test_added_prompt" and not self.extra_prompt_listed):
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {params.name}")
        arguments = params.arguments or {}
        missing = [name for name, _ in prompt.arguments if name not in arguments]
        if missing:
            raise MCPError(INVALID_PARAMS, f"Missing required arguments: {', '.join(missing)}")
        result = await run_step(ctx, prompt.step, arguments, params.input_responses, params.request_state)
        if result.get("resultType") != "input_required":
            result.setdefault("description", prompt.description)
        return result

    # -- resources ------------------------------------------------------------------------------

    STATIC_RESOURCES: tuple[JsonObject, ...] = (
        {
            "uri": "test://static-text",
            "name": "static-text",
            "description": "A static text resource for testing",
            "mimeType": "text/plain",
        },
        {
            "uri": "test://static-binary",
            "name": "static-binary",
            "description": "A static binary resource (image) for testing",
            "mimeType": "image/png",
        },
        {
            "uri": "test://watched-resource",
            "name": "watched-resource",
            "description": "A resource that can be subscribed to for updates",
            "mimeType": "text/plain",
        },
    )
    TEMPLATE_PREFIX, TEMPLATE_SUFFIX = "test://template/", "/data"

    async def list_resources(self, ctx: Context, params: types.PaginatedRequestParams | None) -> JsonObject:
        return {"resources": [dict(resource) for resource in self.STATIC_RESOURCES]}

    async def list_resource_templates(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> JsonObject:
        template = {
            "uriTemplate": "test://template/{id}/data",
            "name": "template-data",
            "description": "A resource template with parameter substitution",
            "mimeType": "application/json",
        }
        return {"resourceTemplates": [template]}

    async def read_resource(self, ctx: Context, params: types.ReadResourceRequestParams) -> JsonObject:
        uri = params.uri
        if uri == "test://static-text":
            content: JsonObject = {
                "text": "This is the content of the static text resource.",
                "mimeType": "text/plain",
            }
        elif uri == "test://static-binary":
            content = {"blob": TEST_IMAGE_BASE64, "mimeType": "image/png"}
        elif uri == "test://watched-resource":
            content = {"text": "Watched resource content", "mimeType": "text/plain"}
        elif uri.startswith(self.TEMPLATE_PREFIX) and uri.endswith(self.TEMPLATE_SUFFIX):
            item_id = uri[len(self.TEMPLATE_PREFIX) : -len(self.TEMPLATE_SUFFIX)]
            if not item_id or "/" in item_id:
                raise MCPError(INVALID_PARAMS, "Resource not found", data={"uri": uri})
            data = {"id": item_id, "templateTest": True, "data": f"Data for ID: {item_id}"}
            content = {"text": compact(data), "mimeType": "application/json"}
        else:
            # SEP-2164: an unknown URI is an error naming the URI, never empty contents.
            raise MCPError(INVALID_PARAMS, "Resource not found", data={"uri": uri})
        return {"contents": [{"uri": uri, **content}]}

    async def subscribe(self, ctx: Context, params: types.SubscribeRequestParams) -> JsonObject:
        self.subscribed_uris.add(params.uri)
        return {}

    async def unsubscribe(self, ctx: Context, params: types.UnsubscribeRequestParams) -> JsonObject:
        self.subscribed_uris.discard(params.uri)
        return {}

    # -- utilities ------------------------------------------------------------------------------

    async def set_logging_level(self, ctx: Context, params: types.SetLevelRequestParams) -> JsonObject:
        # One level for the whole process: the suite drives one client at a time.
        self.log_level = params.level
        return {}

    COMPLETIONS: tuple[str, ...] = ("paris", "park", "party", "test", "testing", "tester")

    async def complete(self, ctx: Context, params: types.CompleteRequestParams) -> JsonObject:
        prefix = params.argument.value or ""
        values = [value for value in self.COMPLETIONS if value.startswith(prefix.lower())]
        return {"completion": {"values": values, "total": len(values), "hasMore": False}}


Handler = Callable[[Context, Any], Awaitable[JsonObject]]


def marked_complete(handler: Handler) -> Handler:
    """Stamp `resultType: complete` on a finished wire-dict result.

    2026-07-28 requires the field on every result and the SDK validates raw dict results
    as they are. Handshake-era results must not carry it (not every result there passes
    through the SDK's per-version sieve, e.g. the empty `logging/setLevel` answer).
    """

    async def wrapped(ctx: Context, params: Any) -> JsonObject:
        result = await handler(ctx, params)
        if is_modern(ctx):
            result.setdefault("resultType", "complete")
        return result

    return wrapped


class FixtureServer(Server[Any]):
    """The SDK's low-level server, advertising list_changed on the handshake era too."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        every_list_changes = NotificationOptions(
            prompts_changed=True, resources_changed=True, tools_changed=True
        )
        return super().create_initialization_options(
            notification_options or every_list_changes, experimental_capabilities, extensions
        )


def build_server() -> FixtureServer:
    """Assemble the fixture server: every handler bound, cache hints and sealed requestState on."""
    fixture = ConformanceFixture()
    cacheable: tuple[CacheableMethod, ...] = (
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    )
    server = FixtureServer(
        SERVER_NAME,
        version=SERVER_VERSION,
        instructions="Fixtures for the official MCP conformance suite.",
        cache_hints={method: CacheHint(ttl_ms=0, scope="private") for method in cacheable},
        on_subscriptions_listen=ListenHandler(fixture.bus),
        get_tool_input_schema=lambda name: (
            fixture.tools[name].input_schema if name in fixture.tools else None
        ),
    )
    # Registered as raw-dict handlers (the constructor's typed slots want result models).
    handlers: list[tuple[str, type[types.RequestParams], Handler]] = [
        ("tools/list", types.PaginatedRequestParams, fixture.list_tools),
        ("tools/call", types.CallToolRequestParams, fixture.call_tool),
        ("resources/list", types.PaginatedRequestParams, fixture.list_resources),
        ("resources/templates/list", types.PaginatedRequestParams, fixture.list_resource_templates),
        ("resources/read", types.ReadResourceRequestParams, fixture.read_resource),
        ("resources/subscribe", types.SubscribeRequestParams, fixture.subscribe),
        ("resources/unsubscribe", types.UnsubscribeRequestParams, fixture.unsubscribe),
        ("prompts/list", types.PaginatedRequestParams, fixture.list_prompts),
        ("prompts/get", types.GetPromptRequestParams, fixture.get_prompt),
        ("completion/complete", types.CompleteRequestParams, fixture.complete),
        ("logging/setLevel", types.SetLevelRequestParams, fixture.set_logging_level),
    ]
    for method, params_type, handler in handlers:
        server.add_request_handler(method, params_type, marked_complete(handler))
    # Seals outgoing requestState and rejects tampered echoes (-32602) before handlers run.
    server.middleware.append(
        RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=SERVER_NAME)
    )
    return server


async def serve_stdio() -> None:
    from mcp.server.stdio import stdio_server

    server = build_server()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve_http(host: str, port: int) -> None:
    import uvicorn

    app = build_server().streamable_http_app(
        host=host,  # localhost hosts switch on DNS-rebinding protection (Host/Origin checks)
        event_store=InMemoryEventStore(),
        retry_interval=100,
    )
    uvicorn.run(app, host=host, port=port, log_level="warning")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--port", type=int, help="serve streamable HTTP at http://HOST:PORT/mcp")
    mode.add_argument("--stdio", action="store_true", help="serve over stdin/stdout")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    # The fixture deliberately serves surface deprecated at 2026-07-28 (logging) for the 2025 era.
    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
    if args.stdio:
        anyio.run(serve_stdio)
    else:
        if not 0 < args.port < 65536:
            parser.error(f"--port must be between 1 and 65535, got {args.port}")
        serve_http(args.host, args.port)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
