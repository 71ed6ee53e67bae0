"""`gateway.auth` in introspection mode (RFC 7662) against a real OpenID provider on loopback.

The provider (oidc-provider) issues opaque access tokens for the gateway's /mcp, which only the
gateway's own resource-server client (`nexus-rs`) may introspect, as a deployment would set it
up. Users sign in through the provider's login form, so their tokens name them (`sub`). Each way
a token can be wrong is answered exactly; the provider counts the introspection requests it
answers, which shows what the gateway's cache of answers saves and how long it keeps them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from oidc_peer import CLIENTS, Idp, initialize, running_idp
from test_resource_server_oidc import Served, answer_of, bearer, echo, invalid_token, open_session, refused
from test_resource_server_oidc import serving as gateway_with_auth

from support.processes import free_port

RS_CLIENT = next(c for c in CLIENTS if c["id"] == "nexus-rs")
# Another resource whose opaque tokens the same resource-server client may introspect: the
# provider answers for them, and only the gateway's own audience check refuses them.
OTHER_OPAQUE = "http://127.0.0.1:1/other-opaque"
JWT_RESOURCE = "http://127.0.0.1:1/jwt"  # the provider issues JWTs for any resource not listed


@pytest.fixture(scope="module")
def gateway_port() -> int:
    """One port for the module's gateways: the provider must know their resource before they start."""
    return free_port()


@pytest.fixture(scope="module")
def opaque_idp(tmp_path_factory: pytest.TempPathFactory, gateway_port: int) -> Iterator[Idp]:
    resource = f"http://127.0.0.1:{gateway_port}/mcp"
    with running_idp(
        tmp_path_factory.mktemp("opaque-idp"),
        opaque_resources={resource: "nexus-rs", OTHER_OPAQUE: "nexus-rs"},
        login=True,
    ) as provider:
        yield provider


@asynccontextmanager
async def serving(idp: Idp, port: int, **auth_overrides: Any) -> AsyncIterator[Served]:
    """A gateway on `port` whose /mcp takes the provider's tokens, checked by introspection."""
    resource = f"http://127.0.0.1:{port}/mcp"
    auth = {
        "resource": resource,
        "issuer": idp.issuer,
        "required_scopes": ["mcp:tools"],
        "introspection_endpoint": f"{idp.issuer}/token/introspection",
        "introspection_client_id": RS_CLIENT["id"],
        "introspection_client_secret": RS_CLIENT["secret"],
        "clock_skew": 0,
        **auth_overrides,
    }
    async with gateway_with_auth(port, auth) as served:
        yield served


@pytest.fixture
async def served(opaque_idp: Idp, gateway_port: int) -> AsyncIterator[Served]:
    async with serving(opaque_idp, gateway_port) as gateway:
        yield gateway


async def first_answer(served: Served, token: str) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=10) as client:
        return await client.post(served.url, headers=bearer(token), json=initialize())


async def test_an_opaque_token_calls_and_the_caller_is_its_user(served: Served, opaque_idp: Idp) -> None:
    token = opaque_idp.login_token("alice", resource=served.url)
    assert token.count(".") != 2  # opaque: nothing the gateway could read without the issuer
    async with httpx2.AsyncClient(timeout=30) as client:
        headers = await open_session(client, served.url, token)
        answer = await client.post(served.url, headers=headers, json=echo())
    assert answer_of(answer)["result"]["content"][0]["text"] == "f: hi"
    caller = served.calls[0].caller
    assert caller.identity == "user:alice" and caller.frontend == "http"
    principal = caller.principal
    assert principal is not None
    assert (principal.subject, principal.client_id, principal.issuer) == (
        "alice",
        "portal",
        opaque_idp.issuer,
    )
    assert principal.scopes == frozenset({"mcp:tools"})


async def test_a_client_credentials_token_names_the_client(served: Served, opaque_idp: Idp) -> None:
    """The provider's introspection answer for a client's own token has no `sub` (its JWTs say
    sub = client id): the caller is then the client itself."""
    token = opaque_idp.token("alice", resource=served.url)
    async with httpx2.AsyncClient(timeout=30) as client:
        headers = await open_session(client, served.url, token)
        answer = await client.post(served.url, headers=headers, json=echo())
    assert answer_of(answer)["result"]["content"][0]["text"] == "f: hi"
    principal = served.calls[0].caller.principal
    assert served.calls[0].caller.identity == "client:alice"
    assert principal is not None and principal.groups == ("eng", "ops")


async def test_a_revoked_token_is_refused(served: Served, opaque_idp: Idp) -> None:
    token = opaque_idp.login_token("alice", resource=served.url)
    opaque_idp.revoke(token, "portal")
    description = "the token is not active (revoked, expired or unknown to the issuer)"
    assert refused(await first_answer(served, token)) == invalid_token(served, description)


async def test_a_revocation_counts_once_the_cached_answer_ends(opaque_idp: Idp, gateway_port: int) -> None:
    async with serving(opaque_idp, gateway_port, introspection_cache_seconds=2) as served:
        token = opaque_idp.login_token("bob", resource=served.url)
        first = await first_answer(served, token)
        checked = time.monotonic()
        opaque_idp.revoke(token, "portal")
        cached = await first_answer(served, token)  # the answer of a moment ago still holds
        await asyncio.sleep(max(0.0, checked + 2.2 - time.monotonic()))
        later = await first_answer(served, token)
    assert first.status_code == 200 and cached.status_code == 200
    description = "the token is not active (revoked, expired or unknown to the issuer)"
    assert refused(later) == invalid_token(served, description)


async def test_a_token_for_another_resource_is_refused(served: Served, opaque_idp: Idp) -> None:
    token = opaque_idp.login_token("alice", resource=OTHER_OPAQUE)
    description = f"the token is not for this resource (its aud must name {served.url})"
    assert refused(await first_answer(served, token)) == invalid_token(served, description)


async def test_a_jwt_the_issuer_will_not_introspect_is_refused(served: Served, opaque_idp: Idp) -> None:
    token = opaque_idp.token("alice", resource=JWT_RESOURCE)
    description = (
        "the issuer does not introspect this token (unsupported_token_type: "
        "Structured JWT Tokens cannot be introspected via the introspection_endpoint)"
    )
    assert refused(await first_answer(served, token)) == invalid_token(served, description)


async def test_a_token_without_the_scope_is_403(served: Served, opaque_idp: Idp) -> None:
    token = opaque_idp.login_token("alice", scope="other:read", resource=served.url)
    description = "the token lacks scope mcp:tools"
    assert refused(await first_answer(served, token)) == (
        403,
        served.challenge("insufficient_scope", description),
        {"error": "insufficient_scope", "error_description": description},
    )


async def test_an_unreachable_introspection_endpoint_is_503_naming_it(opaque_idp: Idp) -> None:
    """Not the token's fault: 503 with Retry-After and no challenge, so the client keeps its token."""
    closed = f"http://127.0.0.1:{free_port()}/token/introspection"  # nothing listens there
    async with serving(opaque_idp, free_port(), introspection_endpoint=closed) as served:
        token = opaque_idp.login_token("alice", resource=OTHER_OPAQUE)  # never looked at
        answer = await first_answer(served, token)
    status, challenge, body = refused(answer)
    assert (status, challenge, answer.headers.get("retry-after")) == (503, "", "1")
    assert body["error"] == "temporarily_unavailable"
    assert body["error_description"].startswith(f"cannot validate the token now: {closed}: ConnectError")


async def test_refused_gateway_credentials_are_503_naming_the_settings(
    opaque_idp: Idp, gateway_port: int
) -> None:
    async with serving(opaque_idp, gateway_port, introspection_client_secret="not-the-secret") as served:
        token = opaque_idp.login_token("alice", resource=served.url)
        status, challenge, body = refused(await first_answer(served, token))
    assert (status, challenge, body["error"]) == (503, "", "temporarily_unavailable")
    assert body["error_description"] == (
        f"cannot validate the token now: {opaque_idp.issuer}/token/introspection answered HTTP 401 "
        "(invalid_client: client authentication failed; check gateway.auth.introspection_client_id "
        "and introspection_client_secret)"
    )


async def test_an_answer_is_reused_for_the_tokens_requests(served: Served, opaque_idp: Idp) -> None:
    token = opaque_idp.login_token("alice", resource=served.url)
    before = opaque_idp.introspections()
    async with httpx2.AsyncClient(timeout=30) as client:
        headers = await open_session(client, served.url, token)  # initialize + initialized
        for request_id in range(1, 4):
            answer = await client.post(served.url, headers=headers, json=echo(request_id))
            assert answer_of(answer)["result"]["content"][0]["text"] == "f: hi"
    assert opaque_idp.introspections() - before == 1  # five requests, one introspection


async def test_without_the_cache_every_request_is_introspected(opaque_idp: Idp, gateway_port: int) -> None:
    async with serving(opaque_idp, gateway_port, introspection_cache_seconds=0) as served:
        token = opaque_idp.login_token("alice", resource=served.url)
        before = opaque_idp.introspections()
        async with httpx2.AsyncClient(timeout=30) as client:
            headers = await open_session(client, served.url, token)
            await client.post(served.url, headers=headers, json=echo())
    assert opaque_idp.introspections() - before == 3


async def test_a_cached_answer_ends_with_the_token(served: Served, opaque_idp: Idp) -> None:
    """A token valid for one second: its cached answer (30 s by default) ends at its expiry, and
    the next request asks the issuer again, which says it is no longer active."""
    # Its exp is the whole second after it was issued: minted just after a second begins, it
    # stays valid for about a second (minted late in one, it would be expired at once).
    await asyncio.sleep(1.02 - time.time() % 1)
    token = opaque_idp.token("brief", resource=served.url)
    before = opaque_idp.introspections()
    first = await first_answer(served, token)
    await asyncio.sleep(2.1)
    later = await first_answer(served, token)
    assert first.status_code == 200
    description = "the token is not active (revoked, expired or unknown to the issuer)"
    assert refused(later) == invalid_token(served, description)
    assert opaque_idp.introspections() - before == 2


def test_the_provider_issues_opaque_tokens_only_its_resource_server_may_read(
    opaque_idp: Idp, gateway_port: int
) -> None:
    """The provider's policy, as the tests rely on it: alice may not introspect even her own token."""
    token = opaque_idp.token("alice", resource=f"http://127.0.0.1:{gateway_port}/mcp")
    as_alice = httpx2.post(
        f"{opaque_idp.issuer}/token/introspection",
        data={"token": token},
        auth=("alice", "alice-secret"),
        timeout=10,
    )
    assert as_alice.json() == {"active": False}
