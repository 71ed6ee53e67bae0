"""The HTTP frontend as an OAuth 2.1 resource server (MCP authorization spec): metadata, challenge, token.

A client that calls `/mcp` without a token gets `401` with `WWW-Authenticate: Bearer
resource_metadata="…", scope="…"`; the metadata document (RFC 9728, served at the well-known
path for the resource) names the authorization server, where the client gets a token for this
resource (RFC 8707). The token is then validated on every request, as a JWT against the issuer's
keys or by introspection (identity/); a valid token without a required scope is `403
insufficient_scope`. The static `gateway.token` keeps working beside it (one operator).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx2
from mcp.server.auth.handlers.metadata import ProtectedResourceMetadataHandler
from mcp.server.auth.routes import build_resource_metadata_url
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.routing import Route

from mcp_nexus.config.identity import ResourceServerSettings
from mcp_nexus.identity.introspection import IntrospectionVerifier
from mcp_nexus.identity.issuer_metadata import discover
from mcp_nexus.identity.jwks import JwksCache
from mcp_nexus.identity.jwt_verifier import JwtVerifier
from mcp_nexus.identity.principal import PrincipalUser
from mcp_nexus.identity.token_errors import InsufficientScope, IssuerUnavailable, TokenRejected

WELL_KNOWN = "/.well-known/oauth-protected-resource"


def _quoted(value: str) -> str:
    """A value for an auth-param (RFC 9110 §11.2): quotes and backslashes escaped."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class ResourceServer:
    """Checks access tokens for the HTTP frontend and says how to get one."""

    def __init__(self, settings: ResourceServerSettings, *, mcp_path: str = "/mcp") -> None:
        self.settings = settings
        self.metadata_url = str(build_resource_metadata_url(AnyHttpUrl(settings.resource)))
        resource_path = urlsplit(settings.resource).path.rstrip("/")
        # The path clients derive from `resource`, the one of our own /mcp (when a proxy maps
        # another prefix to it), and the bare well-known path older clients try.
        self.metadata_paths = tuple(
            dict.fromkeys((WELL_KNOWN + resource_path, WELL_KNOWN + mcp_path.rstrip("/"), WELL_KNOWN))
        )
        self.client = httpx2.AsyncClient(timeout=settings.fetch_timeout, follow_redirects=False)
        self._jwks_uri: str | None = settings.jwks_uri
        self.keys = JwksCache(
            self.client,
            self.jwks_uri,
            max_age=settings.jwks_max_age,
            refresh_interval=settings.jwks_refresh_interval,
        )
        self.verifier: JwtVerifier | IntrospectionVerifier = (
            IntrospectionVerifier(settings, self.client)
            if settings.validation == "introspection"
            else JwtVerifier(settings, self.keys)
        )

    async def jwks_uri(self) -> str:
        """The configured JWKS URL, else the one the issuer's metadata names (discovered once)."""
        if self._jwks_uri is None:
            metadata = await discover(self.client, self.settings.issuer)
            uri = metadata.get("jwks_uri")
            if not isinstance(uri, str):
                raise IssuerUnavailable(f"the metadata of {self.settings.issuer} names no jwks_uri")
            self._jwks_uri = uri
        return self._jwks_uri

    async def authenticate(self, token: str, *, admin: bool) -> PrincipalUser:
        """The user a bearer token names, with the scopes the route needs; else TokenRejected."""
        principal = await self.verifier.verify(token)
        required = list(self.settings.required_scopes)
        if admin:
            if self.settings.admin_scope is None:
                raise InsufficientScope(["(none accepted)"], [])
            required = [self.settings.admin_scope]
        missing = principal.has_scopes(required)
        if missing:
            raise InsufficientScope(missing, required)
        return PrincipalUser(principal, token)

    def challenge(self, rejected: TokenRejected | None = None, *, admin: bool = False) -> str:
        """The WWW-Authenticate value (RFC 6750 §3, RFC 9728 §5.1): where the metadata is, what scope
        to ask for, and (for a token that was sent) what was wrong with it."""
        scopes = (
            [self.settings.admin_scope]
            if admin and self.settings.admin_scope
            else list(self.settings.required_scopes)
        )
        if isinstance(rejected, InsufficientScope) and rejected.required:
            scopes = rejected.required
        parts = []
        if rejected is not None:
            parts += [
                f"error={_quoted(rejected.error)}",
                f"error_description={_quoted(rejected.description)}",
            ]
        parts.append(f"resource_metadata={_quoted(self.metadata_url)}")
        if scopes:
            parts.append(f"scope={_quoted(' '.join(scopes))}")
        return "Bearer " + ", ".join(parts)

    def routes(self) -> list[Route]:
        """The Protected Resource Metadata document (RFC 9728), open to anyone (it holds no secret)."""
        scopes = list(self.settings.required_scopes)
        if self.settings.admin_scope and self.settings.admin_scope not in scopes:
            scopes.append(self.settings.admin_scope)
        # Validated from strings: the model keeps a path-less issuer without a trailing slash
        # (RFC 8414 compares issuers as exact strings).
        metadata = ProtectedResourceMetadata.model_validate(
            {
                "resource": self.settings.resource,
                "authorization_servers": [self.settings.issuer],
                "scopes_supported": scopes or None,
                "resource_name": "Nexus",
            }
        )
        handler = ProtectedResourceMetadataHandler(metadata)
        return [Route(path, handler.handle, methods=["GET"]) for path in self.metadata_paths]

    def status(self) -> dict[str, object]:
        """For /api/frontends: how tokens are checked and what the caches hold."""
        return {
            "issuer": self.settings.issuer,
            "resource": self.settings.resource,
            "validation": self.settings.validation,
            "jwks_fetches": self.keys.fetches,
            "tokens_remembered": len(self.verifier.verified),
        }

    async def aclose(self) -> None:
        await self.client.aclose()
