"""A real OAuth-protected MCP server for tests: the SDK's authorization server and resource server in one.

Run as a process: `python tests/oauth/oauth_peer.py [--token-ttl S]` binds a free loopback
port, prints `PORT <n>` and serves: the MCP endpoint `/mcp` (needs a bearer token of scope
`mcp`), the SDK's authorization-server routes (metadata, dynamic registration, `/authorize`,
`/token`, `/revoke`) and protected-resource metadata. `/authorize` approves at once (it
redirects to the client's redirect URI with the code, as a browser would be sent after
a person said yes). Test hooks, unauthenticated: POST `/test/expire` (every access token
expires now), POST `/test/revoke` (every token, access and refresh, is revoked), GET
`/test/stats` (counts of registrations, authorizations, code and refresh exchanges, and refresh
attempts, refused ones included), GET
`/test/issued` (every token issued, for tests that look for them where they must not be), GET
`/test/presented` (every bearer token shown to `/mcp`), POST `/test/subject` (`{"subject": s}`:
who the next authorizations are for; "operator" at start), POST `/test/forget-clients` (every
registered client is forgotten, as by an authorization server that lost its state: the token
endpoint then answers `invalid_client`, `/authorize` "Client ID not found"). The tool `whoami` (and the
resource `whoami://subject`, the prompt `whoami_prompt`, the completions of prompt `greet`) answers the
subject of the token its call came with.
The tool `confirm` (after `delay` seconds) asks its caller "Confirm for <subject>?" (elicitation).
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import socket
import sys
import time
from typing import Any

import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp_types import Completion
from pydantic import AnyHttpUrl, BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse

SCOPE = "mcp"


class Confirmation(BaseModel):
    """The form of the tool `confirm`'s question."""

    ok: bool = False


class ApprovingProvider:
    """An authorization server that approves every request (the person always says yes)."""

    def __init__(self, token_ttl: int, refresh_delay: float = 0.0) -> None:
        self.token_ttl = token_ttl
        self.refresh_delay = refresh_delay  # a slow refresh, so that concurrent ones overlap
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.resources: dict[str, str | None] = {}  # refresh token -> the resource it was granted for
        self.issued: list[str] = []  # every token ever issued (tests look for them where they must not be)
        self.subject = "operator"  # who the next authorization is for (POST /test/subject: another person)
        self.presented: list[str] = []  # every bearer token shown to /mcp, issued here or not
        self.stats = {
            "registrations": 0,
            "authorizations": 0,
            "code_exchanges": 0,
            "refreshes": 0,
            "refresh_attempts": 0,
        }

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id
        self.stats["registrations"] += 1
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        self.stats["authorizations"] += 1
        code = f"code_{secrets.token_hex(16)}"
        assert client.client_id
        self.codes[code] = AuthorizationCode(
            code=code,
            client_id=client.client_id,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            expires_at=time.time() + 300,
            scopes=params.scopes or [SCOPE],
            code_challenge=params.code_challenge,
            resource=params.resource,
            subject=self.subject,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(code)

    def _issue(
        self, client_id: str, scopes: list[str], resource: str | None, subject: str | None = "operator"
    ) -> OAuthToken:
        access = f"at_{secrets.token_hex(24)}"
        refresh = f"rt_{secrets.token_hex(24)}"
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + self.token_ttl,
            resource=resource,
            subject=subject,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, subject=subject
        )
        self.resources[refresh] = resource
        self.issued += [access, refresh]
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=self.token_ttl,
            refresh_token=refresh,
            scope=" ".join(scopes),
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(code.code, None)
        self.stats["code_exchanges"] += 1
        assert client.client_id
        return self._issue(client.client_id, code.scopes, code.resource, code.subject)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        self.stats["refresh_attempts"] += 1
        await asyncio.sleep(self.refresh_delay)
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        self.stats["refreshes"] += 1
        assert client.client_id
        resource = self.resources.pop(refresh_token.token, None)
        return self._issue(client.client_id, scopes or refresh_token.scopes, resource, refresh_token.subject)

    async def load_access_token(self, token: str) -> AccessToken | None:
        self.presented.append(token)
        access = self.access.get(token)
        if access is None or (access.expires_at is not None and access.expires_at < time.time()):
            return None
        return access

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


def build(port: int, token_ttl: int, refresh_delay: float = 0.0) -> Any:
    base = f"http://127.0.0.1:{port}"
    provider = ApprovingProvider(token_ttl, refresh_delay)
    server = MCPServer(
        name="oauth-peer",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(base),
            resource_server_url=AnyHttpUrl(f"{base}/mcp"),
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=[SCOPE], default_scopes=[SCOPE]
            ),
            revocation_options=RevocationOptions(enabled=True),
            required_scopes=[SCOPE],
            validate_token_resource=True,
        ),
    )

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two numbers (behind the login)."""
        return a + b

    @server.tool()
    async def whoami() -> str:
        """The subject of the token this call came with (whose login the caller used)."""
        token = get_access_token()
        return (token.subject or "-") if token is not None else "-"

    @server.tool()
    async def confirm(ctx: Context, delay: float = 0.0) -> str:
        """After `delay` seconds, ask the caller to confirm, naming the subject of this call's token."""
        await asyncio.sleep(delay)
        token = get_access_token()
        subject = (token.subject or "-") if token is not None else "-"
        answer = await ctx.elicit(f"Confirm for {subject}?", Confirmation)
        return f"{subject}: {answer.action}"

    @server.resource("whoami://subject", mime_type="text/plain")
    async def whoami_resource() -> str:
        """The subject of the token this read came with (resources go per user too)."""
        token = get_access_token()
        return (token.subject or "-") if token is not None else "-"

    @server.prompt()
    async def whoami_prompt() -> str:
        """A prompt naming the subject of the token it was asked with (prompts go per user too)."""
        token = get_access_token()
        return f"asked as {(token.subject or '-') if token is not None else '-'}"

    @server.prompt()
    async def greet(name: str) -> str:
        """A prompt with an argument, whose completions name the asker (completions go per user too)."""
        return f"hello {name}"

    @server.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> Completion:
        token = get_access_token()
        return Completion(values=[(token.subject or "-") if token is not None else "-"])

    @server.custom_route("/test/subject", methods=["POST"])
    async def subject(request: Request) -> JSONResponse:
        provider.subject = (await request.json())["subject"]
        return JSONResponse({"subject": provider.subject})

    @server.custom_route("/test/presented", methods=["GET"])
    async def presented(request: Request) -> JSONResponse:
        return JSONResponse(provider.presented)

    @server.custom_route("/test/expire", methods=["POST"])
    async def expire(request: Request) -> JSONResponse:
        for token in provider.access.values():
            token.expires_at = int(time.time()) - 1
        return JSONResponse({"expired": len(provider.access)})

    @server.custom_route("/test/revoke", methods=["POST"])
    async def revoke(request: Request) -> JSONResponse:
        count = len(provider.access) + len(provider.refresh)
        provider.access.clear()
        provider.refresh.clear()
        return JSONResponse({"revoked": count})

    @server.custom_route("/test/forget-clients", methods=["POST"])
    async def forget_clients(request: Request) -> JSONResponse:
        count = len(provider.clients)
        provider.clients.clear()
        return JSONResponse({"forgotten": count})

    @server.custom_route("/test/issued", methods=["GET"])
    async def issued(request: Request) -> JSONResponse:
        return JSONResponse(provider.issued)

    @server.custom_route("/test/stats", methods=["GET"])
    async def stats(request: Request) -> JSONResponse:
        return JSONResponse(provider.stats)

    return server.streamable_http_app()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--token-ttl", type=int, default=3600)
    parser.add_argument("--refresh-delay", type=float, default=0.0, help="seconds each refresh takes")
    args = parser.parse_args()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = build(port, args.token_ttl, args.refresh_delay)
    print(f"PORT {port}", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    asyncio.run(server.serve(sockets=[sock]))


if __name__ == "__main__":
    sys.exit(main())
