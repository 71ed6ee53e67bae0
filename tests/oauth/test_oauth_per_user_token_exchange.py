"""A per-user server with RFC 8693 token exchange: each caller's token (for the gateway) is traded
at the real OpenID provider for one whose audience is the upstream, itself a Nexus gateway that
accepts only tokens for its own URL and writes who called into its audit log."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx2

from identity.oidc_peer import Idp
from lifecycle.faults import document, faulty
from mcp_nexus.audit.chain import log_files
from mcp_nexus.config.load import config_from_document
from mcp_nexus.runtime import Runtime, RuntimeOptions
from oauth.test_oauth_per_user import McpUser, Setup
from support.polling import eventually
from support.processes import VENV_BIN, free_port, running, wait_for_http
from support.served_gateway import gateway_env


@contextmanager
def protected_upstream(tmp_path: Path, idp: Idp) -> Iterator[tuple[str, Path]]:
    """`nexus serve` taking only the provider's tokens for its own /mcp: (its URL, its audit folder)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    audit = tmp_path / "upstream-audit"
    config = tmp_path / "upstream.json"
    auth = {"resource": url, "issuer": idp.issuer, "required_scopes": ["mcp:tools"]}
    config.write_text(json.dumps(document({"f": faulty("f")}, auth=auth, audit={"dir": str(audit)})))
    args = [str(VENV_BIN / "nexus"), "serve", "--config", str(config), "--port", str(port), "--no-watch"]
    with running(args, env=gateway_env(tmp_path / "upstream"), log=tmp_path / "upstream.log") as proc:
        wait_for_http(
            f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp", timeout=60, proc=proc
        )
        yield url, audit


NEXUS_CLIENT = ("nexus", "nexus-secret")


@asynccontextmanager
async def exchanging_gateway(
    idp: Idp, upstream_url: str, exchanging_client: tuple[str, str]
) -> AsyncIterator[tuple[Runtime, str]]:
    """A gateway taking the provider's users, its server `up` per-user by token exchange; (it, its /mcp)."""
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    client_id, secret = exchanging_client
    exchange = {"token_endpoint": f"{idp.issuer}/token", "client_id": client_id, "client_secret": secret}
    server = {
        "transport": "http",
        "url": upstream_url,
        "auth": {
            "per_user": True,
            "token_exchange": exchange,
            # the gateway's own session (the tool list) is its client at the provider
            "grant": "client_credentials",
            "client_id": NEXUS_CLIENT[0],
            "client_secret": NEXUS_CLIENT[1],
            "issuer": idp.issuer,
            "scopes": ["mcp:tools"],
        },
    }
    gateway = {"port": port, "auth": {"resource": resource, "issuer": idp.issuer}}
    config, _ = config_from_document(document({"up": server}, **gateway))
    async with Runtime(config, RuntimeOptions(bridge=False, watch=False, wait_ready=False)) as runtime:
        upstream = runtime.gateway.upstreams["up"]
        await eventually(lambda: upstream.is_ready, timeout=15, what="up READY on the gateway's own token")
        yield runtime, resource


def _callers(audit: Path) -> list[str]:
    records = [json.loads(line) for path in log_files(audit) for line in path.read_bytes().splitlines()]
    return [r["who"] for r in records if r["kind"] == "tool_call"]


async def test_each_users_token_is_exchanged_and_their_own_never_sent(tmp_path: Path, idp: Idp) -> None:
    with protected_upstream(tmp_path, idp) as (upstream_url, audit):
        async with exchanging_gateway(idp, upstream_url, NEXUS_CLIENT) as (runtime, resource):
            setup = Setup(runtime, None, idp, resource)
            alice, bob = McpUser(setup, "alice"), McpUser(setup, "bob")
            for user, text in ((alice, "from alice"), (bob, "from bob"), (alice, "again")):
                answer = await user.call("up.f.echo", {"text": text})
                assert "result" in answer and not answer["result"].get("isError"), answer
                assert text in json.dumps(answer["result"])
        # the upstream took each call as its user (the exchanged token names them), and refuses
        # the callers' own tokens: their audience is this gateway, not the upstream
        # the upstream gateway writes its audit log in batches (audit/writer.py): wait for the third
        await eventually(lambda: len(_callers(audit)) >= 3, timeout=10, what="the upstream's audit records")
        assert _callers(audit) == ["user:alice", "user:bob", "user:alice"]
        own = httpx2.post(
            upstream_url, headers={"Authorization": f"Bearer {alice.token}"}, json={}, timeout=10
        )
        assert own.status_code == 401, own.text


async def test_a_refused_exchange_is_the_calls_error(tmp_path: Path, idp: Idp) -> None:
    with protected_upstream(tmp_path, idp) as (upstream_url, audit):
        # alice's client may not exchange tokens
        async with exchanging_gateway(idp, upstream_url, ("alice", "alice-secret")) as (runtime, resource):
            answer = await McpUser(Setup(runtime, None, idp, resource), "bob").call(
                "up.f.echo", {"text": "x"}
            )
        error = answer["error"]
        assert error["code"] == -32002, answer
        assert (
            "refused the token exchange (invalid_request: requested grant type is not allowed"
            in error["message"]
        )
        assert _callers(audit) == []
