"""A real OpenID provider (npm `oidc-provider`, oidc_provider.mjs) on 127.0.0.1, started and always stopped."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2

from support.processes import NODE_BIN, ROOT, require, stop_process

SCRIPT = Path(__file__).with_name("oidc_provider.mjs")
NODE_MODULES = ROOT / "tools" / "node" / "node_modules"

# Clients of the provider: (id, secret, groups, access token seconds).
CLIENTS: list[dict[str, Any]] = [
    {"id": "alice", "secret": "alice-secret", "groups": ["eng", "ops"]},
    {"id": "bob", "secret": "bob-secret", "groups": ["sales"]},
    {"id": "admin", "secret": "admin-secret"},
    {"id": "brief", "secret": "brief-secret", "ttl": 1},  # its tokens expire after a second
    # a gateway exchanging its callers' tokens for upstream ones (RFC 8693, per-user servers)
    {"id": "nexus", "secret": "nexus-secret", "token_exchange": True},
    # a resource server that only introspects the opaque tokens of its resources; its secret has
    # characters Basic auth must form-encode (RFC 6749 §2.3.1)
    {"id": "nexus-rs", "secret": "rs secret+%/:=", "resource_server": True},
]
# The confidential client users sign in with (authorization code, the provider's login form).
LOGIN_CLIENT = {"id": "portal", "secret": "portal-secret", "redirect_uri": "http://127.0.0.1:9/callback"}


ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def initialize(client: str = "agent", request_id: int = 0) -> dict[str, Any]:
    """A handshake-era initialize request from an MCP client named `client`."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": client, "version": "1"},
        },
    }


@dataclass
class Idp:
    issuer: str
    proc: subprocess.Popen[bytes]

    def token(self, client: str, *, scope: str = "mcp:tools", resource: str) -> str:
        """An access token by client credentials, for `resource` (RFC 8707), as the provider issues it."""
        secret = _secret(client)
        answer = httpx2.post(
            f"{self.issuer}/token",
            data={"grant_type": "client_credentials", "scope": scope, "resource": resource},
            auth=(client, secret),
            timeout=10,
        )
        assert answer.status_code == 200, answer.text
        return str(answer.json()["access_token"])

    def login_token(self, user: str, *, resource: str, scope: str = "mcp:tools") -> str:
        """An access token for `resource` naming `user` (sub): signed in through the login form.

        Needs a provider started with `login=True`. The authorization code flow as a browser
        walks it: the login page (any password), the consent page, then the code for a token.
        """
        query = {
            "client_id": LOGIN_CLIENT["id"],
            "response_type": "code",
            "redirect_uri": LOGIN_CLIENT["redirect_uri"],
            "scope": f"openid {scope}",
            "resource": resource,
            "state": "s",
        }
        with httpx2.Client(base_url=self.issuer, timeout=10) as browser:
            step = browser.get("/auth", params=query)
            for form in ({"prompt": "login", "login": user, "password": "any"}, {"prompt": "consent"}):
                interaction = _redirect(step, "/interaction/")
                step = browser.post(interaction, data=form)
                step = browser.get(_redirect(step, "/auth/"))
            code = parse_qs(urlsplit(_redirect(step, LOGIN_CLIENT["redirect_uri"])).query)["code"][0]
            answer = browser.post(
                "/token",
                data={
                    "grant_type": "authorization_code",
                    "code": code,
                    "redirect_uri": LOGIN_CLIENT["redirect_uri"],
                    "resource": resource,
                },
                auth=(LOGIN_CLIENT["id"], LOGIN_CLIENT["secret"]),
            )
        assert answer.status_code == 200, answer.text
        return str(answer.json()["access_token"])

    def revoke(self, token: str, client: str) -> None:
        """`client` revokes its token at the provider's revocation endpoint (RFC 7009)."""
        secret = LOGIN_CLIENT["secret"] if client == LOGIN_CLIENT["id"] else _secret(client)
        answer = httpx2.post(
            f"{self.issuer}/token/revocation",
            data={"token": token, "token_type_hint": "access_token"},
            auth=(client, secret),
            timeout=10,
        )
        assert answer.status_code == 200, answer.text

    def introspections(self) -> int:
        """How many introspection requests the provider has answered so far."""
        answer = httpx2.get(f"{self.issuer}/__test/introspections", timeout=10)
        assert answer.status_code == 200, answer.text
        return int(answer.json()["count"])

    def rotate(self) -> str:
        """A new signing key replaces the old one; its kid."""
        answer = httpx2.post(f"{self.issuer}/__test/rotate", timeout=10)
        assert answer.status_code == 200, answer.text
        return str(answer.json()["kid"])


def _secret(client: str) -> str:
    return str(next(c["secret"] for c in CLIENTS if c["id"] == client))


def _redirect(response: httpx2.Response, expected: str) -> str:
    """Where a redirect of the login flow leads; it must contain `expected` (else say where it went)."""
    location = response.headers.get("location", "")
    assert response.is_redirect and expected in location, (response.status_code, location, response.text)
    return str(location)


@contextmanager
def running_idp(
    tmp: Path,
    *,
    keys_file: Path | None = None,
    opaque_resources: dict[str, str] | None = None,
    login: bool = False,
) -> Iterator[Idp]:
    """One provider; providers given the same `keys_file` sign with the same key (other issuers).

    `opaque_resources` maps a resource URL to the client of its resource server: the provider
    issues opaque tokens for it that only that client may introspect. `login`: users can sign
    in (LOGIN_CLIENT, Idp.login_token).
    """
    config = tmp / "idp.json"
    config.write_text(
        json.dumps(
            {
                "resource": "http://127.0.0.1:1/mcp",
                "keys_file": str(keys_file or tmp / "keys.json"),
                "clients": CLIENTS,
                "opaque_resources": opaque_resources or {},
                **({"login_client": LOGIN_CLIENT} if login else {}),
            }
        )
    )
    with node_provider(SCRIPT, config) as (issuer, proc):
        yield Idp(issuer, proc)


@contextmanager
def node_provider(script: Path, config: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """An oidc-provider script run by node with its JSON config: its issuer (the first line it prints)."""
    proc = subprocess.Popen(
        [require(NODE_BIN / "node"), str(script), str(NODE_MODULES), str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # bounded by the test's timeout; empty if node died
        assert line, f"oidc-provider exited with {proc.wait(timeout=5)} before listening"
        yield json.loads(line)["issuer"], proc
    finally:
        stop_process(proc)
