"""A real OpenID provider for the dashboard's login (oidc_login_provider.mjs), and a gateway that logs in through it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from identity.oidc_peer import node_provider
from lifecycle.faults import document, faulty
from support.processes import (
    VENV_BIN,
    free_port,
    running,
    wait_for_http,
)
from support.served_gateway import ServedGateway, gateway_env

SCRIPT = Path(__file__).with_name("oidc_login_provider.mjs")
TOKEN = "dash-oidc-Tok3n-5e8a1c"

# Accounts of the provider's login form (any password): alice is in ops (admin here), bob in eng
# (viewer), mallory in no group the gateway names (no role).
USERS: dict[str, dict[str, Any]] = {
    "alice": {"groups": ["ops"], "email": "alice@example.com", "name": "Alice Ops"},
    "bob": {"groups": ["eng"], "name": "Bob Eng"},
    "mallory": {"groups": ["guests"]},
}
# Machine clients (client credentials): access tokens carrying these groups.
CLIENTS = [
    {"id": "ops-bot", "secret": "ops-bot-secret", "groups": ["ops"]},
    {"id": "eng-bot", "secret": "eng-bot-secret", "groups": ["eng"]},
    {"id": "stranger", "secret": "stranger-secret", "groups": ["guests"]},
]
ROLES = {"admin": ["group:ops"], "viewer": ["group:eng"]}


@dataclass
class LoginIdp:
    issuer: str
    resource: str

    def token(self, client: str) -> str:
        secret = next(c["secret"] for c in CLIENTS if c["id"] == client)
        answer = httpx2.post(
            f"{self.issuer}/token",
            data={"grant_type": "client_credentials", "scope": "mcp:tools", "resource": self.resource},
            auth=(client, secret),
            timeout=10,
        )
        assert answer.status_code == 200, answer.text
        return str(answer.json()["access_token"])


@contextmanager
def running_login_idp(tmp: Path, *, redirect_uri: str, resource: str) -> Iterator[LoginIdp]:
    config = tmp / "login-idp.json"
    config.write_text(
        json.dumps({"redirect_uri": redirect_uri, "resource": resource, "users": USERS, "clients": CLIENTS})
    )
    with node_provider(SCRIPT, config) as (issuer, _proc):
        yield LoginIdp(issuer, resource)


@contextmanager
def gateway_with_login(tmp: Path) -> Iterator[tuple[ServedGateway, LoginIdp]]:
    """`nexus serve` with a token, gateway.auth and gateway.dashboard_login against a fresh provider.

    The port is chosen first: the provider must know the redirect URI when it starts."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with running_login_idp(
        tmp, redirect_uri=base + "/dashboard/oidc/callback", resource=base + "/mcp"
    ) as idp:
        doc = document({"f": faulty("f")}, token=TOKEN)
        doc["gateway"]["auth"] = {"resource": base + "/mcp", "issuer": idp.issuer}
        doc["gateway"]["dashboard_login"] = {
            "issuer": idp.issuer,
            "client_id": "nexus-dashboard",
            "label": "Test IdP",
            "roles": ROLES,
        }
        config = tmp / "nexus.json"
        config.write_text(json.dumps(doc))
        log = tmp / "gateway.log"
        args = [str(VENV_BIN / "nexus"), "serve", "--config", str(config), "--port", str(port), "--no-watch"]
        with running(args, env=gateway_env(tmp), log=log) as proc:
            wait_for_http(base + "/healthz", timeout=60, proc=proc)
            gateway = ServedGateway(base, TOKEN, log)
            gateway.wait_state("f", "READY")
            yield gateway, idp
