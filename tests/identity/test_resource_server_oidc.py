"""The HTTP frontend as a resource server, against a real OpenID provider (oidc-provider on loopback).

Each way a token can be wrong is answered exactly: status, WWW-Authenticate and body.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest_asyncio
from oidc_peer import ACCEPT, Idp, initialize

from lifecycle.faults import document, faulty
from mcp_nexus.config.load import config_from_document
from mcp_nexus.pipeline.call_finished import CallFinished
from mcp_nexus.runtime import Runtime, RuntimeOptions
from support.processes import free_port

STATIC = "static-token-for-the-operator-0123"


@dataclass
class Served:
    runtime: Runtime
    url: str  # the /mcp endpoint, also the resource tokens are for
    base: str
    calls: list[CallFinished]

    @property
    def metadata_url(self) -> str:
        return f"{self.base}/.well-known/oauth-protected-resource/mcp"

    def challenge(
        self, error: str | None = None, description: str | None = None, scope: str = "mcp:tools"
    ) -> str:
        parts = [f'error="{error}"', f'error_description="{description}"'] if error else []
        return "Bearer " + ", ".join([*parts, f'resource_metadata="{self.metadata_url}"', f'scope="{scope}"'])


@pytest_asyncio.fixture
async def served(idp: Idp) -> AsyncIterator[Served]:
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    auth = {
        "resource": resource,
        "issuer": idp.issuer,
        "required_scopes": ["mcp:tools"],
        "admin_scope": "nexus:admin",
        "clock_skew": 0,
        "jwks_refresh_interval": 0.3,
    }
    async with serving(port, auth) as served:
        yield served


@asynccontextmanager
async def serving(port: int, auth: dict[str, Any]) -> AsyncIterator[Served]:
    """A gateway on `port` with server `f`, the static token and `gateway.auth` = `auth`."""
    config, _ = config_from_document(document({"f": faulty("f")}, port=port, token=STATIC, auth=auth))
    async with Runtime(config, RuntimeOptions(bridge=False, watch=False, wait_ready=True)) as runtime:
        calls: list[CallFinished] = []
        unsubscribe = runtime.gateway.events.subscribe(CallFinished, calls.append)
        try:
            yield Served(runtime, auth["resource"], f"http://127.0.0.1:{port}", calls)
        finally:
            unsubscribe()


def echo(request_id: int = 1) -> dict[str, Any]:
    params = {"name": "f.echo", "arguments": {"text": "hi"}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def bearer(token: str) -> dict[str, str]:
    return {**ACCEPT, "Authorization": f"Bearer {token}"}


async def open_session(client: httpx2.AsyncClient, url: str, token: str) -> dict[str, str]:
    opened = await client.post(url, headers=bearer(token), json=initialize())
    assert opened.status_code == 200, opened.text
    headers = {
        **bearer(token),
        "Mcp-Session-Id": opened.headers["mcp-session-id"],
        "Mcp-Protocol-Version": "2025-11-25",
    }
    await client.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    return headers


def answer_of(response: httpx2.Response) -> dict[str, Any]:
    if response.headers["content-type"].startswith("application/json"):
        return dict(response.json())
    data = [line[5:] for line in response.text.splitlines() if line.startswith("data:") and line[5:].strip()]
    return dict(json.loads(data[-1]))


def refused(response: httpx2.Response) -> tuple[int, str, dict[str, Any]]:
    return response.status_code, response.headers.get("www-authenticate", ""), response.json()


def invalid_token(served: Served, description: str) -> tuple[int, str, dict[str, Any]]:
    """What a request with a bad token is answered: 401, the challenge saying why, the same in the body."""
    body = {"error": "invalid_token", "error_description": description}
    return 401, served.challenge("invalid_token", description), body


async def test_the_metadata_names_the_resource_and_its_issuer(served: Served, idp: Idp) -> None:
    async with httpx2.AsyncClient(timeout=10) as client:
        answer = await client.get(served.metadata_url)
    assert answer.status_code == 200
    assert answer.json() == {
        "resource": served.url,
        "authorization_servers": [idp.issuer],
        "scopes_supported": ["mcp:tools", "nexus:admin"],
        "bearer_methods_supported": ["header"],
        "resource_name": "Nexus",
    }


async def test_no_token_is_401_naming_the_metadata_and_scope(served: Served) -> None:
    async with httpx2.AsyncClient(timeout=10) as client:
        answer = await client.post(served.url, headers=ACCEPT, json=initialize())
    assert refused(answer) == (
        401,
        served.challenge(),
        {
            "error": "unauthorized",
            "error_description": "this endpoint needs a bearer token (see resource_metadata)",
        },
    )


async def test_a_valid_token_calls_and_the_caller_is_its_user(served: Served, idp: Idp) -> None:
    token = idp.token("alice", resource=served.url)
    async with httpx2.AsyncClient(timeout=30) as client:
        headers = await open_session(client, served.url, token)
        lean = await client.post(served.url, headers=headers, json=echo(1))  # the lean path
        sse = await client.post(served.url, headers={**headers, "Accept": ACCEPT["Accept"]}, json=echo(2))
    assert answer_of(lean)["result"]["content"][0]["text"] == "f: hi"
    assert answer_of(sse)["result"]["content"][0]["text"] == "f: hi"
    callers = [call.caller for call in served.calls]
    assert [c.identity for c in callers] == ["user:alice", "user:alice"]
    principal = callers[0].principal
    assert principal is not None
    assert (principal.subject, principal.client_id, principal.issuer) == ("alice", "alice", idp.issuer)
    assert principal.groups == ("eng", "ops") and "mcp:tools" in principal.scopes
    assert callers[0].client == "agent" and callers[0].frontend == "http"


async def test_a_session_answers_only_the_credential_that_opened_it(served: Served, idp: Idp) -> None:
    alice, bob = idp.token("alice", resource=served.url), idp.token("bob", resource=served.url)
    async with httpx2.AsyncClient(timeout=30) as client:
        headers = await open_session(client, served.url, alice)
        as_bob = await client.post(
            served.url, headers={**headers, "Authorization": f"Bearer {bob}"}, json=echo()
        )
        as_static = await client.post(
            served.url, headers={**headers, "Authorization": f"Bearer {STATIC}"}, json=echo()
        )
    assert as_bob.status_code == 404 and as_static.status_code == 404
    assert served.calls == []


async def test_the_static_token_still_works_without_a_user(served: Served) -> None:
    async with httpx2.AsyncClient(timeout=30) as client:
        headers = await open_session(client, served.url, STATIC)
        answer = await client.post(served.url, headers=headers, json=echo())
        tools = await client.get(served.base + "/api/tools", headers={"Authorization": f"Bearer {STATIC}"})
    assert answer_of(answer)["result"]["content"][0]["text"] == "f: hi"
    assert tools.status_code == 200
    assert [c.caller.identity for c in served.calls] == ["http:agent"]


async def test_a_token_for_another_resource_is_refused(served: Served, idp: Idp) -> None:
    token = idp.token("alice", resource="http://127.0.0.1:1/other")
    async with httpx2.AsyncClient(timeout=10) as client:
        answer = await client.post(served.url, headers=bearer(token), json=initialize())
    description = f"the token is not for this resource (its aud must name {served.url})"
    assert refused(answer) == invalid_token(served, description)


async def test_a_token_of_another_issuer_is_refused(served: Served, idp: Idp, other_issuer: Idp) -> None:
    token = other_issuer.token("alice", resource=served.url)  # same signing key, other `iss`
    async with httpx2.AsyncClient(timeout=10) as client:
        answer = await client.post(served.url, headers=bearer(token), json=initialize())
    description = f"the token is not from the issuer {idp.issuer}"
    assert refused(answer) == invalid_token(served, description)


async def test_an_expired_token_is_refused(served: Served, idp: Idp) -> None:
    token = idp.token("brief", resource=served.url)  # valid for one second
    exp = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))["exp"]
    await asyncio.sleep(max(0.0, exp - time.time()) + 1.1)
    async with httpx2.AsyncClient(timeout=10) as client:
        answer = await client.post(served.url, headers=bearer(token), json=initialize())
    assert refused(answer) == (
        401,
        served.challenge("invalid_token", "the token has expired"),
        {"error": "invalid_token", "error_description": "the token has expired"},
    )


async def test_a_token_without_the_scope_is_403(served: Served, idp: Idp) -> None:
    token = idp.token("alice", scope="other:read", resource=served.url)
    async with httpx2.AsyncClient(timeout=10) as client:
        answer = await client.post(served.url, headers=bearer(token), json=initialize())
        admin = await client.get(
            served.base + "/api/tools", headers=bearer(idp.token("alice", resource=served.url))
        )
    description = "the token lacks scope mcp:tools"
    assert refused(answer) == (
        403,
        served.challenge("insufficient_scope", description),
        {"error": "insufficient_scope", "error_description": description},
    )
    # The admin API asks for the admin scope, which a /mcp token lacks.
    assert refused(admin)[:2] == (
        403,
        served.challenge("insufficient_scope", "the token lacks scope nexus:admin", scope="nexus:admin"),
    )


async def test_the_admin_scope_opens_the_admin_api(served: Served, idp: Idp) -> None:
    token = idp.token("admin", scope="nexus:admin", resource=served.url)
    async with httpx2.AsyncClient(timeout=10) as client:
        answer = await client.get(served.base + "/api/tools", headers=bearer(token))
    assert answer.status_code == 200 and "f.echo" in {row["name"] for row in answer.json()["tools"]}


async def test_a_tampered_signature_is_refused(served: Served, idp: Idp) -> None:
    header, payload, signature = idp.token("alice", resource=served.url).split(".")
    middle = len(signature) // 2
    flipped = signature[:middle] + ("A" if signature[middle] != "A" else "B") + signature[middle + 1 :]
    async with httpx2.AsyncClient(timeout=10) as client:
        answer = await client.post(
            served.url, headers=bearer(f"{header}.{payload}.{flipped}"), json=initialize()
        )
    description = "the token's signature does not verify"
    assert refused(answer) == invalid_token(served, description)


async def test_a_forged_payload_under_a_real_signature_is_refused(served: Served, idp: Idp) -> None:
    header, payload, signature = idp.token("bob", resource=served.url).split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["sub"] = "alice"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    async with httpx2.AsyncClient(timeout=10) as client:
        answer = await client.post(
            served.url, headers=bearer(f"{header}.{forged}.{signature}"), json=initialize()
        )
    assert refused(answer)[0] == 401 and refused(answer)[2]["error_description"] == (
        "the token's signature does not verify"
    )
