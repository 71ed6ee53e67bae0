"""HttpGuard in-process: allow-lists, the off-loopback mode, repeated headers and the body cap.

The black-box checks against `nexus serve` are in test_http_security.py; these drive the ASGI
middleware directly so each header combination is exact (no client rewrites or drops any).
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import Message, Receive, Scope, Send

from mcp_nexus.frontends.http.security import HOST_VERDICTS_KEPT, GuardSettings, HttpGuard


class Recorder:
    """The app behind the guard: records that it ran and the body it read."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        self.bodies.append(body)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


async def call(
    guard: HttpGuard,
    headers: list[tuple[str, str]],
    chunks: list[bytes] | None = None,
    path: str = "/api/servers",
) -> tuple[int, dict[str, Any]]:
    chunks = chunks or [b""]
    pending: list[Message] = [
        {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1}
        for i, chunk in enumerate(chunks)
    ]
    received = 0

    async def receive() -> Message:
        nonlocal received
        received += 1
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers],
    }
    await guard(scope, receive, send)
    status = sent[0]["status"]
    body = sent[1]["body"]
    return status, (json.loads(body) if status != 200 else {"received": received})


def guard(**settings: Any) -> tuple[HttpGuard, Recorder]:
    app = Recorder()
    return HttpGuard(app, GuardSettings(**settings)), app


async def test_exactly_one_host_header_is_required() -> None:
    g, app = guard()
    assert (await call(g, []))[0] == 400
    status, body = await call(g, [("Host", "localhost"), ("Host", "evil.com")])
    assert status == 400 and "exactly one" in body["error"]
    status, _ = await call(g, [("Host", "evil.com"), ("Host", "localhost")])
    assert status == 400
    assert app.bodies == []


async def test_several_origin_headers_are_refused() -> None:
    g, _ = guard()
    status, body = await call(
        g, [("Host", "localhost"), ("Origin", "http://localhost"), ("Origin", "http://evil.com")]
    )
    assert status == 403 and "Origin" in body["error"]


async def test_allowed_hosts_match_name_and_port() -> None:
    g, _ = guard(allowed_hosts=["Nexus.LAN", "box.lan:9000", "wild.lan:*"])
    assert (await call(g, [("Host", "nexus.lan:1234")]))[0] == 200
    assert (await call(g, [("Host", "NEXUS.lan")]))[0] == 200
    assert (await call(g, [("Host", "box.lan:9000")]))[0] == 200
    assert (await call(g, [("Host", "box.lan:9001")]))[0] == 421
    assert (await call(g, [("Host", "box.lan")]))[0] == 421
    assert (await call(g, [("Host", "wild.lan:1")]))[0] == 200
    assert (await call(g, [("Host", "nexus.lan.evil.com")]))[0] == 421
    assert (await call(g, [("Host", "evil.nexus.lan")]))[0] == 421
    assert (await call(g, [("Host", "[::1]nexus.lan")]))[0] == 400


async def test_allowed_origins_match_scheme_host_and_port() -> None:
    g, _ = guard(allowed_origins=["https://app.example", "http://dev.example:*", "null"])
    host = ("Host", "localhost")
    assert (await call(g, [host, ("Origin", "https://app.example")]))[0] == 200
    assert (await call(g, [host, ("Origin", "HTTPS://APP.example")]))[0] == 200
    assert (await call(g, [host, ("Origin", "http://app.example")]))[0] == 403  # other scheme
    assert (await call(g, [host, ("Origin", "https://app.example:8443")]))[0] == 200  # no port pinned
    assert (await call(g, [host, ("Origin", "https://app.example.evil.com")]))[0] == 403
    assert (await call(g, [host, ("Origin", "https://app.example@evil.com")]))[0] == 403
    assert (await call(g, [host, ("Origin", "http://dev.example:5173")]))[0] == 200
    assert (await call(g, [host, ("Origin", "null")]))[0] == 200  # allowed on purpose, verbatim


async def test_off_loopback_any_wellformed_host_is_accepted_but_the_token_is_required() -> None:
    g, _ = guard(bind_host="0.0.0.0", token="s3cret")
    auth = ("Authorization", "Bearer s3cret")
    assert (await call(g, [("Host", "192.0.2.7:8787"), auth]))[0] == 200
    assert (await call(g, [("Host", "gateway.lan"), auth]))[0] == 200
    assert (await call(g, [("Host", "[::1]evil.com"), auth]))[0] == 400  # still parsed
    assert (await call(g, [("Host", "gateway.lan")]))[0] == 401
    assert (await call(g, [("Host", "gateway.lan"), ("Authorization", "Bearer s3cret2")]))[0] == 401
    assert (await call(g, [("Host", "gateway.lan"), auth, auth]))[0] == 401  # one Authorization only
    assert (await call(g, [("Host", "gateway.lan"), ("Authorization", "bearer s3cret")]))[0] == 200


async def test_a_host_verdict_is_remembered_and_the_memory_is_bounded() -> None:
    """Each Host is judged once (a client repeats it on every request); the verdict, refusal or
    not, is the same the second time, and a client inventing names cannot grow the memory."""
    g, app = guard(allowed_hosts=["nexus.lan"])
    for _ in range(2):
        assert (await call(g, [("Host", "nexus.lan")]))[0] == 200
        status, body = await call(g, [("Host", "evil.com")])
        assert status == 421 and "not a name of this gateway" in body["error"]
        status, body = await call(g, [("Host", "[::1]evil.com")])
        assert status == 400 and "invalid Host header" in body["error"]
    assert len(app.bodies) == 2
    for n in range(HOST_VERDICTS_KEPT * 3):
        assert (await call(g, [("Host", f"h{n}.evil.com")]))[0] == 421
        assert len(g._host_verdicts) <= HOST_VERDICTS_KEPT
    assert (await call(g, [("Host", "evil.com")]))[0] == 421  # judged anew after the memory was cleared
    assert (await call(g, [("Host", "127.0.0.1:9")]))[0] == 200


async def test_off_loopback_with_allowed_hosts_pins_the_names() -> None:
    g, _ = guard(bind_host="0.0.0.0", token="t", allowed_hosts=["gateway.lan"])
    auth = ("Authorization", "Bearer t")
    assert (await call(g, [("Host", "gateway.lan:8787"), auth]))[0] == 200
    assert (await call(g, [("Host", "other.lan"), auth]))[0] == 421
    assert (await call(g, [("Host", "127.0.0.1"), auth]))[0] == 200  # loopback always names us


async def test_the_body_is_capped_by_declared_length_without_reading() -> None:
    g, app = guard(max_body_bytes=100)
    status, body = await call(g, [("Host", "localhost"), ("Content-Length", "101")], [b"x" * 101])
    assert status == 413 and body["limit"] == 100 and "request_max_bytes" in body["error"]
    assert app.bodies == []


async def test_the_body_is_capped_while_streaming() -> None:
    g, app = guard(max_body_bytes=100)
    status, _ = await call(g, [("Host", "localhost")], [b"x" * 60, b"x" * 60, b"x" * 60])
    assert status == 413 and app.bodies == []


async def test_a_lying_content_length_is_still_counted() -> None:
    g, app = guard(max_body_bytes=100)
    status, _ = await call(g, [("Host", "localhost"), ("Content-Length", "10")], [b"x" * 60, b"x" * 60])
    assert status == 413 and app.bodies == []


async def test_a_body_at_the_cap_reaches_the_app_whole() -> None:
    g, app = guard(max_body_bytes=100)
    status, _ = await call(g, [("Host", "localhost")], [b"a" * 50, b"b" * 50])
    assert status == 200 and app.bodies == [b"a" * 50 + b"b" * 50]


async def test_bad_content_length_is_a_bad_request() -> None:
    g, _ = guard()
    for values in (["abc"], ["-1"], ["1", "2"], ["1e3"], ["0x10"], ["\xb9"]):
        headers = [("Host", "localhost")] + [("Content-Length", v) for v in values]
        status, body = await call(g, headers)
        assert status == 400 and "Content-Length" in body["error"], values


async def test_refusals_come_before_the_body_is_read() -> None:
    g, app = guard(token="t")
    status, _ = await call(g, [("Host", "localhost")], [b"x" * 10])
    assert status == 401 and app.bodies == []
