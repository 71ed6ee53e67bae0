"""One OAuth server's gateway parts in this process (no HTTP frontend), and an operator's login through them.

The parts are real: an `Upstream`, its `Supervisor`, the gateway's OAuth manager over an
in-memory vault, told to restart the server once a login is done (as the frontend tells it).
The browser is played by a GET of the authorization URL (oauth_peer.py approves at once) and
the callback by handing its query to the manager, as `/oauth/callback` does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from urllib.parse import parse_qs, urlparse

import httpx2

from mcp_nexus.config.schema import ServerConfig
from mcp_nexus.upstream.oauth.manager import OAuthManager
from mcp_nexus.upstream.oauth.vault import MemoryVault
from mcp_nexus.upstream.supervisor import Supervisor
from mcp_nexus.upstream.upstream import Upstream


@dataclass
class OAuthServerParts:
    upstream: Upstream
    supervisor: Supervisor
    manager: OAuthManager
    vault: MemoryVault


@asynccontextmanager
async def oauth_server_parts(config: ServerConfig) -> AsyncIterator[OAuthServerParts]:
    """The parts serving `config` (not started); closed on the way out."""
    upstream = Upstream(config)
    supervisor = Supervisor(upstream)
    vault = MemoryVault()
    manager = OAuthManager(upstream.events, vault)
    manager.configure(upstreams={config.name: upstream}, restart=lambda name: supervisor.start())
    try:
        yield OAuthServerParts(upstream, supervisor, manager, vault)
    finally:
        await supervisor.close()


async def log_in(manager: OAuthManager, name: str) -> str:
    """An operator's login, the browser included; the client id its authorization URL named."""
    started = await manager.login(name)
    url = started["authorization_url"]
    assert url, started
    async with httpx2.AsyncClient(timeout=10) as browser:
        answer = await browser.get(url, follow_redirects=False)
    assert answer.status_code in (302, 303, 307), answer.text
    back = {k: v[0] for k, v in parse_qs(urlparse(answer.headers["location"]).query).items()}
    server, error = await manager.complete(back)
    assert (server, error) == (name, None)
    return parse_qs(urlparse(url).query)["client_id"][0]
