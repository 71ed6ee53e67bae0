"""Issue item 5: a lone UTF-16 surrogate in a request's arguments is answered at once, on every way in.

`"text": "\\ud800"` is valid JSON text but not Unicode. Forwarded, a strict upstream drops the
line and the caller waited 30 s for a timeout that named the wrong cause. Now each way in
answers -32602 naming the argument's path within a bound (stdio, HTTP in both eras, the
Xiaozhi endpoint link, the device envelope; the admin API says 400 with the path), and the
same connection goes on serving the next call. Real processes: a gateway in front of the
echo upstream (which would echo the surrogate back, so an error proves nothing was forwarded).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
import pytest

from robustness.expectations import call, line
from robustness.gateways import ECHO_TOOL, SURROGATE_TOOL
from robustness.http_client import HandshakeSession, HttpAnswer, modern_request, post_modern
from robustness.stdio_client import StdioGateway
from robustness.wire import INVALID_PARAMS
from robustness.xiaozhi_links import Device, Stack, frame_with_id

pytestmark = pytest.mark.asyncio(loop_scope="module")

BOUND = 2.0  # seconds: an answer, not a timeout
ARGUMENTS = {"text": "a\ud800b"}
PATH = "arguments.text"
ENDPOINT_ECHO = "echo_echo"  # the endpoint link's name for echo.echo


def assert_refused(answer: dict[str, Any], path: str = PATH, surrogate: str = "\\ud800") -> None:
    error = answer.get("error")
    assert isinstance(error, dict) and error["code"] == INVALID_PARAMS, answer
    assert error["data"] == {"path": path, "surrogate": surrogate}, answer
    assert f"{path} contains a lone UTF-16 surrogate ({surrogate})" in error["message"], answer


async def timed(work: Callable[[], Awaitable[Any]]) -> Any:
    started = time.monotonic()
    result = await asyncio.wait_for(work(), BOUND * 2)
    elapsed = time.monotonic() - started
    assert elapsed < BOUND, f"answered after {elapsed:.2f} s"
    return result


def echoed(answer: dict[str, Any], said: str) -> None:
    assert answer["result"]["isError"] is False, answer
    assert answer["result"]["content"][0]["text"] == '{"said":"' + said + '"}', answer


# -- stdio -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "path", "surrogate"),
    [
        (ARGUMENTS, PATH, "\\ud800"),
        ({"items": ["ok", "x\udfffy"]}, "arguments.items[1]", "\\udfff"),
        ({"deep": {"\udc00": 1}}, "arguments.deep", "\\udc00"),
        ({"a b": "\udbff"}, 'arguments["a b"]', "\\udbff"),
    ],
)
async def test_stdio(stdio_gateway: StdioGateway, arguments: Any, path: str, surrogate: str) -> None:
    params = {"name": ECHO_TOOL, "arguments": arguments}
    answer = await timed(
        lambda: asyncio.to_thread(stdio_gateway.request, "tools/call", params, timeout=BOUND)
    )
    assert_refused(answer, path, surrogate)
    after = {"name": ECHO_TOOL, "arguments": {"said": "stdio"}}
    echoed(await asyncio.to_thread(stdio_gateway.request, "tools/call", after), "stdio")


async def test_stdio_a_surrogate_in_an_upstream_result_is_a_result(stdio_gateway: StdioGateway) -> None:
    """The other way: the lean path's serialiser refused it (an internal error); now it is escaped."""
    params = {"name": SURROGATE_TOOL, "arguments": {}}
    answer = await asyncio.to_thread(stdio_gateway.request, "tools/call", params)
    assert answer["result"]["content"][0]["text"] == "broken \ud800 text", answer


# -- HTTP, both eras ---------------------------------------------------------------------------


def handshake_call(url: str, request_id: str, arguments: Any) -> dict[str, Any]:
    with httpx2.Client(timeout=BOUND * 2) as client:
        session = HandshakeSession(client, url).open()
        return session.post(line(call(request_id, ECHO_TOOL, arguments))).only_answer()


def modern_call(url: str, request_id: str, arguments: Any) -> dict[str, Any]:
    message = modern_request("tools/call", {"name": ECHO_TOOL, "arguments": arguments}, request_id)
    with httpx2.Client(timeout=BOUND * 2) as client:
        answer: HttpAnswer = post_modern(client, url, line(message), message)
    return answer.only_answer()


@pytest.mark.parametrize("era_call", [handshake_call, modern_call], ids=["handshake", "2026-07-28"])
async def test_http(stack: Stack, era_call: Callable[[str, str, Any], dict[str, Any]]) -> None:
    url = stack.gateway.mcp_url
    answer = await timed(lambda: asyncio.to_thread(era_call, url, "surr", ARGUMENTS))
    assert answer["id"] == "surr", answer
    assert_refused(answer)
    echoed(await asyncio.to_thread(era_call, url, "after", {"said": "http"}), "http")


# -- Xiaozhi: the endpoint link and the device envelope ----------------------------------------


async def test_xiaozhi_endpoint(stack: Stack) -> None:
    session = await stack.endpoint_session()
    answer = await timed(lambda: session.call_tool(ENDPOINT_ECHO, ARGUMENTS, timeout=BOUND * 2))
    assert_refused(answer)
    echoed(await session.call_tool(ENDPOINT_ECHO, {"said": "endpoint"}), "endpoint")


async def test_device_envelope(device: Device) -> None:
    start = len(device.frames)
    await device.send_payload_raw(line(call(4242, ECHO_TOOL, ARGUMENTS)))
    answer = await timed(lambda: frame_with_id(device.frames, start, 4242, BOUND * 2, lambda: device.closed))
    assert_refused(answer)
    echoed(await device.request("tools/call", {"name": ECHO_TOOL, "arguments": {"said": "device"}}), "device")


# -- the admin API -----------------------------------------------------------------------------


async def test_admin_api_call(stack: Stack) -> None:
    url = f"{stack.gateway.base}/api/tools/{ECHO_TOOL}/call"

    def post(body: bytes) -> httpx2.Response:
        return httpx2.post(url, content=body, headers={"Content-Type": "application/json"}, timeout=BOUND * 2)

    response = await timed(lambda: asyncio.to_thread(post, line({"arguments": ARGUMENTS})))
    assert response.status_code == 400, response.text
    assert response.json()["path"] == "$.arguments.text" and "surrogate" in response.json()["error"]
    after = await asyncio.to_thread(post, line({"arguments": {"said": "admin"}}))
    assert after.status_code == 200, after.text
    assert after.json()["content"][0]["text"] == '{"said":"admin"}', after.text
