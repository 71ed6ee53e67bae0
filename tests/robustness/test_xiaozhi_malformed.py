"""Issue 12 items 2, 3 and 13 on the Xiaozhi endpoint link and the envelope server.

The inputs that crash stdio closed these links with 1011. docs/XIAOZHI.md: malformed
messages are ignored and the channel stays open. So after each bad message the same link
must still answer a ping, and every frame Nexus sent must be strict JSON. The endpoint
link answers well-formed requests; the envelope server follows the device rules (numeric
ids only, notifications ignored), so there only numeric-id requests must be answered.
"""

from __future__ import annotations

import contextlib

import pytest

from robustness.expectations import MALFORMED_CASES, Case, line
from robustness.wire import INVALID_PARAMS, id_key, is_answer
from robustness.xiaozhi_links import (
    Device,
    Stack,
    as_frame,
    closed_note,
    frame_with_id,
    judge_frames,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

# Names as the endpoint sees them (dots become underscores on that link).
ENDPOINT_ECHO = "echo_echo"
ENDPOINT_SURROGATE = "echo_lone_surrogate"
# Cases whose answers the endpoint dialect may give differently from stdio: it reads a batch
# as several messages (docs/XIAOZHI.md), and a binary frame with bad UTF-8 with replacement.
ENDPOINT_DIALECT = {"batch", "empty-batch", "invalid-utf8", "lone-surrogate-raw-bytes"}


# -- endpoint link ------------------------------------------------------------------------------


LATE_ANSWER_GRACE = 1.0  # seconds to wait for an answer the dialect may give after the ping's


async def endpoint_exchange(
    stack: Stack, raw: bytes, wait_for: tuple[object, ...] = (), maybe: tuple[object, ...] = ()
) -> list[dict]:
    """Send `raw` as the endpoint, then a ping on the same link; the answers `raw` earned.

    `maybe`: ids an answer may carry although none is required: when nothing came by the
    ping's answer, they get a moment more, so a late answer is judged here and never spills
    into the next test.
    """
    session = await stack.endpoint_session()
    start = len(session.frames)
    await session.send_raw(as_frame(raw))
    for request_id in wait_for:
        try:
            await frame_with_id(session.frames, start, request_id, closed=session.closed.is_set)
        except AssertionError:
            raise AssertionError(f"no answer to {request_id!r}; {closed_note(session)}") from None
    try:
        pong = await session.ping()
    except (ConnectionError, TimeoutError, OSError) as exc:
        raise AssertionError(f"ping failed ({type(exc).__name__}); {closed_note(session)}") from None
    assert "result" in pong, pong
    assert not session.closed.is_set(), closed_note(session)
    for request_id in maybe:
        with contextlib.suppress(AssertionError):
            await frame_with_id(session.frames, start, request_id, timeout=LATE_ANSWER_GRACE)
            break
    messages, problems = judge_frames(session.frames[start:])
    assert not problems, problems
    return [m for m in messages if is_answer(m) and id_key(m.get("id")) != id_key(pong["id"])]


@pytest.mark.parametrize("case", MALFORMED_CASES, ids=[case.name for case in MALFORMED_CASES])
async def test_endpoint_link_stays_open_and_answers_right(stack: Stack, case: Case) -> None:
    raw = case.raw.replace(b'"echo.echo"', b'"echo_echo"').replace(
        b'"echo.lone_surrogate"', b'"echo_lone_surrogate"'
    )
    own_ids = tuple(i for i in case.expect.result_ids if i is not None)
    answers = await endpoint_exchange(stack, raw, wait_for=case.expect.required_ids, maybe=own_ids)
    if case.name in ENDPOINT_DIALECT:
        return  # the link lived and sent only valid JSON: that is what this dialect promises
    if case.expect.required_ids or answers:  # may ignore what it need not answer, else answer right
        case.expect.check(answers)


async def test_endpoint_answers_a_lone_surrogate_result_as_valid_json(stack: Stack) -> None:
    call = line({"jsonrpc": "2.0", "id": 77, "method": "tools/call", "params": {"name": ENDPOINT_SURROGATE}})
    (answer,) = await endpoint_exchange(stack, call, wait_for=(77,))
    text = answer["result"]["content"][0]["text"]
    assert "broken" in text, answer


async def test_endpoint_answers_lone_surrogate_arguments(stack: Stack) -> None:
    call = line(
        {
            "jsonrpc": "2.0",
            "id": 78,
            "method": "tools/call",
            "params": {"name": ENDPOINT_ECHO, "arguments": {"text": "a\ud800b"}},
        }
    )
    (answer,) = await endpoint_exchange(stack, call, wait_for=(78,))
    assert "result" in answer or "error" in answer


# -- envelope server ----------------------------------------------------------------------------


async def envelope_exchange(device: Device, raw: bytes, wait_for: tuple[object, ...] = ()) -> list[dict]:
    start = len(device.frames)
    await device.send_payload_raw(raw)
    for request_id in wait_for:
        try:
            await frame_with_id(device.frames, start, request_id, closed=lambda: device.closed)
        except AssertionError:
            raise AssertionError(f"no answer to {request_id!r}; {device.closed_note()}") from None
    try:
        pong = await device.request("ping", timeout=10)
    except Exception as exc:
        raise AssertionError(f"ping failed ({type(exc).__name__}); {device.closed_note()}") from None
    assert "result" in pong and not device.closed, device.closed_note()
    payloads, problems = device.payloads_since(start)
    assert not problems, problems
    return [p for p in payloads if is_answer(p) and id_key(p.get("id")) != id_key(pong["id"])]


@pytest.mark.parametrize("case", MALFORMED_CASES, ids=[case.name for case in MALFORMED_CASES])
async def test_envelope_connection_survives(device: Device, case: Case) -> None:
    answers = await envelope_exchange(device, case.raw)
    for answer in answers:  # device rules: only numeric ids are ever answered
        assert answer.get("id") is None or isinstance(answer["id"], int), answer


@pytest.mark.parametrize(
    ("name", "payload", "answered"),
    [
        ("params-array", {"jsonrpc": "2.0", "id": 901, "method": "tools/call", "params": [1]}, True),
        (
            "lone-surrogate-arguments",
            {
                "jsonrpc": "2.0",
                "id": 902,
                "method": "tools/call",
                "params": {"name": "echo.echo", "arguments": {"t": "\ud800"}},
            },
            True,
        ),
        (
            "lone-surrogate-result",
            {"jsonrpc": "2.0", "id": 903, "method": "tools/call", "params": {"name": "echo.lone_surrogate"}},
            True,
        ),
        (
            "initialize-params-array",
            {"jsonrpc": "2.0", "id": 904, "method": "initialize", "params": [1]},
            True,
        ),
        (
            "cancel-object-id",
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {"a": 1}}},
            False,
        ),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
async def test_envelope_numeric_id_requests_are_answered(
    device: Device, name: str, payload: dict, answered: bool
) -> None:
    """Item 3 on the envelope server: a lone surrogate dropped the connection."""
    request_id = payload.get("id")
    answers = await envelope_exchange(device, line(payload), wait_for=(request_id,) if answered else ())
    if not answered:
        assert answers == [], answers
        return
    (answer,) = answers
    assert answer["id"] == request_id, answer
    if name in ("params-array", "initialize-params-array"):
        assert answer["error"]["code"] == INVALID_PARAMS, answer


@pytest.mark.parametrize("token", [b"NaN", b"Infinity", b"-Infinity"])
async def test_envelope_never_echoes_a_bare_nan_id(device: Device, token: bytes) -> None:
    """Item 13: `{"id": NaN}` came back as bare NaN (not JSON). Ignored, or an error with id null."""
    answers = await envelope_exchange(device, b'{"jsonrpc":"2.0","id":' + token + b',"method":"ping"}')
    for answer in answers:
        assert answer.get("id") is None and "error" in answer, answer
