"""The admin API answers bad input with 4xx and a clear JSON error, never with a 5xx or a crash.

Against `nexus serve` on a free loopback port, with embedded servers only (nothing upstream can
legitimately fail). Each case is a defect once found: 502 for invalid arguments, 500 for deep
JSON and for a lone surrogate, no body limit.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx2
import psutil
import pytest

from mcp_nexus.frontends.admin.json_io import MAX_JSON_DEPTH
from support.processes import VENV_BIN, free_port, running, wait_for_http

CONFIG = {
    "gateway": {"include_builtins": False, "retries": 0},
    "servers": {
        "demo": {"transport": "embedded", "module": "support.demo_server:create_server"},
        "peer": {"transport": "embedded", "module": "frontends.admin_peer:create_server", "timeout": 0.5},
    },
}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, psutil.Process]]:
    tmp = tmp_path_factory.mktemp("admin")
    config = tmp / "nexus.json"
    config.write_text(json.dumps(CONFIG))
    port = free_port()
    args = [str(VENV_BIN / "nexus"), "serve", "-c", str(config), "--port", str(port)]
    with running(args, log=tmp / "gw.log") as proc:
        wait_for_http(f"http://127.0.0.1:{port}/healthz", proc=proc)
        yield f"http://127.0.0.1:{port}", psutil.Process(proc.pid)
        assert proc.poll() is None, "the gateway exited"
        assert "Traceback" not in (tmp / "gw.log").read_text(errors="replace")


@pytest.fixture
def base(gateway: tuple[str, psutil.Process]) -> str:
    return gateway[0]


def call(base: str, tool: str, body: bytes | str) -> httpx2.Response:
    data = body.encode() if isinstance(body, str) else body
    return httpx2.post(
        f"{base}/api/tools/{tool}/call",
        content=data,
        headers={"Content-Type": "application/json"},
        timeout=30,
    )


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_invalid_arguments_are_422_with_the_field_path(base: str) -> None:
    response = call(base, "demo.add", '{"arguments": {"a": "x", "b": 1}}')
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == -32602 and body["path"] == "$.arguments.a"
    assert "integer" in body["error"]


def test_a_missing_argument_is_422_at_the_arguments(base: str) -> None:
    response = call(base, "demo.add", '{"arguments": {"a": 1}}')
    assert response.status_code == 422 and response.json()["path"] == "$.arguments"
    assert "'b' is a required property" in response.json()["error"]


def test_an_unknown_tool_is_404(base: str) -> None:
    response = call(base, "no.such_tool", "{}")
    assert response.status_code == 404 and "no.such_tool" in response.json()["error"]


def test_a_tool_that_times_out_is_504(base: str) -> None:
    response = call(base, "peer.sleep", '{"arguments": {"seconds": 5}}')
    assert response.status_code == 504 and response.json()["code"] == -32001


def test_a_tool_level_error_is_a_200_result_with_is_error(base: str) -> None:
    response = call(base, "demo.fail", '{"arguments": {"reason": "on purpose"}}')
    assert response.status_code == 200 and response.json()["isError"] is True


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('{"arguments": ', "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('"text"', "must be a JSON object"),
        ('{"arguments": {"a": NaN, "b": 1}}', "NaN is not a JSON value"),
        ('{"arguments": {"a": Infinity, "b": 1}}', "Infinity is not a JSON value"),
        (b'{"arguments": {"text": "\xff"}}', "not valid JSON"),  # not UTF-8
        ('{"arguments": [1]}', "'arguments' must be a JSON object"),
    ],
)
def test_a_bad_body_is_400_with_a_clear_message(base: str, body: str | bytes, expected: str) -> None:
    response = call(base, "demo.add", body)
    assert response.status_code == 400
    assert expected in response.json()["error"]


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 5_000, 100_000])
def test_deep_json_is_400(base: str, depth: int) -> None:
    response = call(base, "peer.echo_value", '{"arguments": {"value": ' + nested(depth) + "}}")
    assert response.status_code == 400
    assert f"nested more than {MAX_JSON_DEPTH} levels" in response.json()["error"]


def test_json_at_the_depth_limit_goes_through(base: str) -> None:
    depth = MAX_JSON_DEPTH - 2  # the body object and "arguments" are two levels
    response = call(base, "peer.echo_value", '{"arguments": {"value": ' + nested(depth) + "}}")
    assert response.status_code == 200, response.text
    assert response.json()["isError"] is False


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ('{"arguments": {"text": "\\ud800"}}', "$.arguments.text"),
        ('{"arguments": {"text": "a\\udfffb"}}', "$.arguments.text"),
        ('{"arguments": {"text": "ok", "list": ["x", "\\udc00"]}}', "$.arguments.list[1]"),
        ('{"arguments": {"\\ud800": "key"}}', "$.arguments"),
    ],
)
def test_a_lone_surrogate_in_arguments_is_400_with_the_path(base: str, body: str, path: str) -> None:
    response = call(base, "demo.echo", body)
    assert response.status_code == 400
    assert response.json()["path"] == path and "surrogate" in response.json()["error"]


def test_a_valid_surrogate_pair_is_fine(base: str) -> None:
    response = call(base, "demo.echo", '{"arguments": {"text": "\\ud83d\\ude00"}}')
    assert response.status_code == 200
    assert response.json()["content"][0]["text"] == "demo: \U0001f600"


@pytest.mark.parametrize("tool", ["peer.lone_surrogate", "peer.lone_surrogate_structured"])
def test_a_lone_surrogate_in_a_result_is_escaped(base: str, tool: str) -> None:
    response = call(base, tool, "{}")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert b"\\ud800" in response.content  # escaped: the body is pure ASCII
    assert response.content.isascii()
    result = json.loads(response.content)
    assert result["content"][0]["text"] == "before \ud800 after"
    if tool.endswith("structured"):
        assert result["structuredContent"] == {"result": "before \ud800 after"}


def test_cache_clear_checks_its_body_the_same_way(base: str) -> None:
    clear = f"{base}/api/cache/clear"
    assert httpx2.post(clear, content="{").status_code == 400
    assert httpx2.post(clear, content='{"tool": 5}').json()["path"] == "$.tool"
    assert httpx2.post(clear, content='{"tool": null}').status_code == 200
    deep = httpx2.post(clear, content='{"x": ' + nested(100_000) + "}")
    assert deep.status_code == 400


def test_every_admin_error_is_json(base: str) -> None:
    for response in (
        httpx2.get(f"{base}/api/servers/nope"),
        httpx2.post(f"{base}/api/servers/nope/restart"),
        httpx2.post(f"{base}/api/servers/demo/explode"),
        call(base, "demo.add", "{"),
    ):
        assert response.status_code in (400, 404)
        assert isinstance(response.json()["error"], str)


def test_a_200_mb_body_is_refused_without_growing_the_gateway(gateway: tuple[str, psutil.Process]) -> None:
    base, process = gateway
    before = process.memory_info().rss
    chunk = b" " * (1 << 20)

    def body() -> Iterator[bytes]:  # no Content-Length: counted while it streams
        for _ in range(200):
            yield chunk

    for declared in (False, True):
        content = b" " * (200 << 20) if declared else body()
        response = httpx2.post(f"{base}/api/tools/demo.echo/call", content=content, timeout=60)
        assert response.status_code == 413
        assert response.json()["limit"] == 4 * 1024 * 1024
    grown = process.memory_info().rss - before
    assert grown < 32 * 1024 * 1024, f"RSS grew by {grown >> 20} MiB"
    assert httpx2.get(f"{base}/healthz").status_code == 200


def test_mcp_endpoint_has_the_same_cap(base: str) -> None:
    response = httpx2.post(
        f"{base}/mcp", content=b" " * (5 << 20), headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 413


@pytest.mark.parametrize("name", ["a%0Ab", "%0A", "a%0D%0Ab", "%40%C3%B9%18%0A%F1%99%B8%9Ep%06%C2%BF"])
def test_a_tool_name_with_a_line_break_is_an_unknown_tool_in_json(base: str, name: str) -> None:
    """Found by schemathesis: such a name matched no route and got Starlette's plain-text 404."""
    response = call(base, name, "{}")
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/json"
    assert "Unknown tool" in response.json()["error"]


def test_a_path_no_route_matches_is_a_json_error_under_api_and_plain_elsewhere(base: str) -> None:
    missing = httpx2.get(f"{base}/api/no/such/endpoint")
    assert missing.status_code == 404 and missing.headers["content-type"] == "application/json"
    assert missing.json()["error"] == "no such endpoint: GET /api/no/such/endpoint"
    wrong_method = httpx2.get(f"{base}/api/tools/demo.add/call")
    assert wrong_method.status_code == 405 and wrong_method.headers["content-type"] == "application/json"
    assert wrong_method.json()["error"] == "Method Not Allowed" and "POST" in wrong_method.headers["allow"]
    elsewhere = httpx2.get(f"{base}/no-such-page")
    assert elsewhere.status_code == 404 and elsewhere.text == "Not Found"
    assert elsewhere.headers["content-type"].startswith("text/plain")
