"""A token endpoint's refusal of a grant without a person, told in the terms of the server's `auth:` settings.

The SDK's providers report a refused token request as `Token exchange failed (401): <the
authorization server's JSON>`. That names RFC 6749's error code (`invalid_client`) but not what the
operator should fix. `SettingsNamedAuth` wraps such a provider. It passes every step of the
provider's flow through unchanged. When the token endpoint refuses with one of the codes of RFC 6749
section 5.2, it raises `ClientRefused`, which names the server, the settings that code points at,
and the server's own code and description (cut to 200 characters, control characters replaced:
they go into every retry's log line). It never repeats what was sent, so no secret. A refusal
it cannot read stays the SDK's error, as it was.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

import httpx2
from mcp.client.auth.exceptions import OAuthTokenError

from mcp_nexus.config.oauth import OAuthSettings


class ClientRefused(OAuthTokenError):
    """The authorization server refused the credentials or grant a server's `auth:` settings give."""


def settings_to_check(settings: OAuthSettings, code: str) -> str | None:
    """The `auth.*` settings an RFC 6749 section 5.2 error code points at; None for other codes."""
    if code == "invalid_client":
        if settings.token_endpoint_auth_method == "private_key_jwt":
            return "auth.client_id and auth.private_key_file (the key this client is registered with)"
        return "auth.client_id and auth.client_secret"
    if code == "unauthorized_client":
        return f"auth.client_id (the client may not use the {settings.grant} grant) and auth.grant"
    if code == "invalid_scope":
        return "auth.scopes"
    if code == "invalid_grant" and settings.grant == "identity_assertion":
        return "auth.identity_provider (the ID-JAG it issued was refused) and auth.issuer"
    return None


CODE_MAX = 64
DESCRIPTION_MAX = 200  # the server's words go into the server's state and every retry's log line


def _printable(text: str, limit: int) -> str:
    """At most `limit` characters, none that could start a forged log line or move the cursor."""
    kept = "".join(char if char.isprintable() else "?" for char in text[: limit + 1])
    return kept if len(kept) <= limit else kept[:limit] + "..."


def refusal_of(exc: OAuthTokenError) -> tuple[str, str]:
    """(error code, description) of the SDK's "Token exchange failed (...): <body>"; ("", "") when unreadable."""
    _, _, body = str(exc).partition("): ")
    try:
        answer: Any = json.loads(body)
    except ValueError:
        return "", ""
    if not isinstance(answer, dict) or not isinstance(answer.get("error"), str):
        return "", ""
    description = answer.get("error_description")
    return (
        _printable(answer["error"], CODE_MAX),
        _printable(description, DESCRIPTION_MAX) if isinstance(description, str) else "",
    )


class SettingsNamedAuth(httpx2.Auth):
    def __init__(self, inner: httpx2.Auth, server: str, settings: OAuthSettings) -> None:
        self.inner = inner
        self.server = server
        self.settings = settings
        self.requires_request_body = inner.requires_request_body
        self.requires_response_body = inner.requires_response_body

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = self.inner.async_auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        except OAuthTokenError as exc:
            code, description = refusal_of(exc)
            settings = settings_to_check(self.settings, code)
            if settings is None:
                raise
            told = f"{code}: {description}" if description else code
            raise ClientRefused(
                f"server {self.server!r}: the authorization server refused the {self.settings.grant} grant"
                f" ({told}); check {settings}"
            ) from exc
        finally:
            await flow.aclose()
