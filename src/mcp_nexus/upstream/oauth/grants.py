"""The grants no person takes part in: `client_credentials` and `identity_assertion` (docs/OAUTH.md).

Both are the SDK's extension providers (`mcp.client.auth.extensions`), built from a server's
`auth:` settings; Nexus adds only what the SDK leaves to its caller:
- `client_credentials` with `private_key_jwt`: the PEM key is read from `private_key_file` at
  each connect (a rotated key is picked up by a restart of the server, not of the gateway) and
  tried once here, so a wrong key or algorithm fails the connect naming the setting, not a
  token request with an opaque `invalid_client`;
- `identity_assertion` (enterprise-managed authorization, SEP-990): the first leg, an RFC 8693
  token exchange at the enterprise identity provider turning its ID token into an ID-JAG, which
  the SDK then presents to the MCP authorization server as a jwt-bearer grant (RFC 7523).

A refused token request (RFC 6749's `invalid_client` and kin) names the `auth.*` settings to
check (refusal.py). Tokens go to the server's vault storage like any login's, so a restart
reuses an unexpired one; a 401 makes the provider fetch a new token by itself. Nothing here
waits for a person, so such a server is never NEEDS_AUTH: a refused credential is an error of
the connect (ERROR, retried).
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx2
import jwt
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
from mcp.shared.exceptions import MCPDeprecationWarning

from mcp_nexus.config.oauth import IdentityProviderSettings, OAuthSettings
from mcp_nexus.upstream.bounded_answers import SIDE_ANSWERS_ONLY, AnswerRefused
from mcp_nexus.upstream.oauth.errors import LoginFailed
from mcp_nexus.upstream.oauth.refusal import SettingsNamedAuth
from mcp_nexus.upstream.oauth.storage import VaultTokenStorage

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"
IDP_TIMEOUT_S = 30.0


def unattended_auth(
    server: str, server_url: str, settings: OAuthSettings, storage: VaultTokenStorage
) -> httpx2.Auth:
    """The `httpx2.Auth` of a server whose `auth.grant` is client_credentials or identity_assertion;
    a refused token request names the settings to check (refusal.py)."""
    return SettingsNamedAuth(_provider(server, server_url, settings, storage), server, settings)


def _provider(
    server: str, server_url: str, settings: OAuthSettings, storage: VaultTokenStorage
) -> httpx2.Auth:
    if settings.grant == "identity_assertion":
        return _identity_assertion(server, server_url, settings, storage)
    if settings.grant != "client_credentials":
        raise ValueError(f"server {server!r}: grant {settings.grant!r} needs a person to log in")
    assert settings.client_id is not None  # the config's validation
    with warnings.catch_warnings():
        # Without `issuer` the SDK warns (it will be required in SDK 3.0); the operator chose to let
        # the server's metadata name the authorization server, and docs/OAUTH.md says what that means.
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        if settings.token_endpoint_auth_method == "private_key_jwt":
            return PrivateKeyJWTOAuthProvider(
                server_url=server_url,
                storage=storage,
                client_id=settings.client_id,
                assertion_provider=_signed_assertions(server, settings),
                scope=settings.scope,
                issuer=settings.issuer,
            )
        assert settings.client_secret is not None
        method = settings.token_endpoint_auth_method or "client_secret_basic"
        assert method in ("client_secret_basic", "client_secret_post")
        return ClientCredentialsOAuthProvider(
            server_url=server_url,
            storage=storage,
            client_id=settings.client_id,
            client_secret=settings.client_secret,
            token_endpoint_auth_method=method,
            scope=settings.scope,
            issuer=settings.issuer,
        )


def _signed_assertions(server: str, settings: OAuthSettings) -> Callable[[str], Awaitable[str]]:
    """Client assertions (RFC 7523 section 2.2) signed with the key of `private_key_file`."""
    assert settings.private_key_file is not None and settings.client_id is not None
    path = Path(settings.private_key_file).expanduser()
    try:
        key = path.read_text()
    except OSError as exc:
        raise LoginFailed(
            f"server {server!r}: auth.private_key_file {str(path)!r}: {exc.strerror or exc}"
        ) from None
    try:
        jwt.encode({"probe": True}, key, algorithm=settings.signing_algorithm)
    except (ValueError, TypeError, jwt.PyJWTError) as exc:
        # The library's words about the key, never the key.
        raise LoginFailed(
            f"server {server!r}: auth.private_key_file {str(path)!r} is not a private key for"
            f" signing_algorithm {settings.signing_algorithm}: {type(exc).__name__}"
        ) from None
    return SignedJWTParameters(
        issuer=settings.client_id,
        subject=settings.client_id,
        signing_key=key,
        signing_algorithm=settings.signing_algorithm,
    ).create_assertion_provider()


def _identity_assertion(
    server: str, server_url: str, settings: OAuthSettings, storage: VaultTokenStorage
) -> IdentityAssertionOAuthProvider:
    idp = settings.identity_provider
    assert idp is not None and settings.client_id and settings.client_secret and settings.issuer
    method = settings.token_endpoint_auth_method or "client_secret_basic"
    assert method in ("client_secret_basic", "client_secret_post")

    async def fetch_id_jag(audience: str, resource: str) -> str:
        return await exchange_id_token(server, idp, audience=audience, resource=resource)

    return IdentityAssertionOAuthProvider(
        server_url=server_url,
        storage=storage,
        client_id=settings.client_id,
        client_secret=settings.client_secret,
        issuer=settings.issuer,
        assertion_provider=fetch_id_jag,
        scope=settings.scope,
        token_endpoint_auth_method=method,
    )


def _id_token(server: str, idp: IdentityProviderSettings) -> str:
    if idp.id_token is not None:
        return idp.id_token
    assert idp.id_token_file is not None
    path = Path(idp.id_token_file).expanduser()
    try:
        token = path.read_text().strip()
    except OSError as exc:
        raise LoginFailed(
            f"server {server!r}: auth.identity_provider.id_token_file {str(path)!r}: {exc.strerror or exc}"
        ) from None
    if not token:
        raise LoginFailed(f"server {server!r}: auth.identity_provider.id_token_file {str(path)!r} is empty")
    return token


async def exchange_id_token(
    server: str, idp: IdentityProviderSettings, *, audience: str, resource: str
) -> str:
    """Leg 1 of SEP-990: the IdP's ID token for an ID-JAG naming the MCP authorization server and server."""
    form = {
        "grant_type": TOKEN_EXCHANGE,
        "requested_token_type": ID_JAG_TYPE,
        "subject_token": _id_token(server, idp),
        "subject_token_type": ID_TOKEN_TYPE,
        "audience": audience,
        "resource": resource,
        "client_id": idp.client_id,
    }
    if idp.client_secret:
        form["client_secret"] = idp.client_secret
    try:
        async with httpx2.AsyncClient(timeout=IDP_TIMEOUT_S, event_hooks=SIDE_ANSWERS_ONLY) as http:
            answer = await http.post(idp.token_endpoint, data=form)
    except (httpx2.HTTPError, AnswerRefused) as exc:
        raise LoginFailed(
            f"server {server!r}: the identity provider at {idp.token_endpoint} did not answer: {exc}"
        ) from None
    body = _json(answer)
    if answer.status_code != 200:
        # The IdP's error code and description, never what was sent.
        reason = f"{body.get('error', '')}: {body.get('error_description', '')}".strip(": ")
        raise LoginFailed(
            f"server {server!r}: the identity provider refused the token exchange"
            f" ({answer.status_code}{', ' + reason if reason else ''})"
        )
    if body.get("issued_token_type") not in (None, ID_JAG_TYPE) or not isinstance(
        body.get("access_token"), str
    ):
        raise LoginFailed(
            f"server {server!r}: the identity provider's answer holds no ID-JAG"
            f" (issued_token_type {body.get('issued_token_type')!r})"
        )
    return str(body["access_token"])


def _json(answer: httpx2.Response) -> dict[str, object]:
    try:
        body = answer.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
