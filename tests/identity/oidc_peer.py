"""A real OpenID provider (npm `oidc-provider`, oidc_provider.mjs) on 127.0.0.1, started and always stopped."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
]


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
        secret = next(c["secret"] for c in CLIENTS if c["id"] == client)
        answer = httpx2.post(
            f"{self.issuer}/token",
            data={"grant_type": "client_credentials", "scope": scope, "resource": resource},
            auth=(client, secret),
            timeout=10,
        )
        assert answer.status_code == 200, answer.text
        return str(answer.json()["access_token"])

    def rotate(self) -> str:
        """A new signing key replaces the old one; its kid."""
        answer = httpx2.post(f"{self.issuer}/__test/rotate", timeout=10)
        assert answer.status_code == 200, answer.text
        return str(answer.json()["kid"])


@contextmanager
def running_idp(tmp: Path, *, keys_file: Path | None = None) -> Iterator[Idp]:
    """One provider; providers given the same `keys_file` sign with the same key (other issuers)."""
    config = tmp / "idp.json"
    config.write_text(
        json.dumps(
            {
                "resource": "http://127.0.0.1:1/mcp",
                "keys_file": str(keys_file or tmp / "keys.json"),
                "clients": CLIENTS,
            }
        )
    )
    proc = subprocess.Popen(
        [require(NODE_BIN / "node"), str(SCRIPT), str(NODE_MODULES), str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # bounded by the test's timeout; empty if node died
        assert line, f"oidc-provider exited with {proc.wait(timeout=5)} before listening"
        yield Idp(json.loads(line)["issuer"], proc)
    finally:
        stop_process(proc)
