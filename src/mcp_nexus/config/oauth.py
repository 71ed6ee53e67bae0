"""A server's `auth: oauth` setting: Nexus logs in to an OAuth-protected MCP server (docs/OAUTH.md).

    servers:
      tracker:
        transport: http
        url: https://tracker.example.com/mcp
        auth: oauth                      # discover everything, register dynamically
      docs:
        transport: http
        url: https://docs.example.com/mcp
        auth:
          client_id: nexus-prod          # pre-registered at the authorization server
          client_secret: ${DOCS_SECRET}
          scopes: [docs.read]
          token_endpoint_auth_method: client_secret_basic

Everything left out is discovered (RFC 9728 protected-resource metadata, RFC 8414 server
metadata) or chosen by the authorization server (dynamic registration, RFC 7591).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from mcp_nexus.config.schema_base import Strict

TokenEndpointAuthMethod = Literal["none", "client_secret_post", "client_secret_basic"]


class OAuthSettings(Strict):
    """How Nexus authorizes itself to one upstream server (the MCP authorization flow)."""

    client_id: str | None = Field(
        default=None,
        description="a client registered beforehand; None = Client ID Metadata Document or dynamic registration",
    )
    client_secret: str | None = Field(
        default=None, repr=False, description="the pre-registered client's secret"
    )
    scopes: list[str] | None = Field(
        default=None, description="scopes to ask for; None = what the server's challenge or metadata names"
    )
    client_metadata_url: str | None = Field(
        default=None,
        description="an https URL of this gateway's Client ID Metadata Document, used as client_id where the "
        "authorization server supports it",
    )
    token_endpoint_auth_method: TokenEndpointAuthMethod | None = Field(
        default=None,
        description="how the client authenticates at the token endpoint; None = client_secret_basic with a "
        "secret, else none",
    )
    redirect_uri: str | None = Field(
        default=None,
        description="where the authorization server sends the browser back; None = this gateway's "
        "/oauth/callback on loopback (http://127.0.0.1:<port>/oauth/callback)",
    )

    @field_validator("scopes", mode="before")
    @classmethod
    def _split_scopes(cls, value: Any) -> Any:
        # "a b" reads as the space-separated scope string of OAuth itself.
        return value.split() if isinstance(value, str) else value

    @field_validator("client_metadata_url")
    @classmethod
    def _check_metadata_url(cls, value: str | None) -> str | None:
        if value is None:
            return value
        from urllib.parse import urlparse

        parsed = urlparse(value)
        if parsed.scheme != "https" or parsed.path in ("", "/"):
            raise ValueError(
                f"'client_metadata_url' must be an https URL with a path (a Client ID Metadata Document), got {value!r}"
            )
        return value

    @field_validator("redirect_uri")
    @classmethod
    def _check_redirect(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"'redirect_uri' must be an http:// or https:// URL, got {value!r}")
        return value

    @model_validator(mode="after")
    def _check_secret(self) -> OAuthSettings:
        if self.client_secret and not self.client_id:
            raise ValueError("'client_secret' needs the 'client_id' it belongs to")
        if (
            self.token_endpoint_auth_method in ("client_secret_post", "client_secret_basic")
            and not self.client_secret
        ):
            raise ValueError(
                f"token_endpoint_auth_method {self.token_endpoint_auth_method!r} needs 'client_secret'"
            )
        return self

    @property
    def scope(self) -> str | None:
        """The scopes as OAuth writes them (space-separated), or None."""
        return " ".join(self.scopes) if self.scopes else None


def parse_auth(value: Any) -> Any:
    """`auth: oauth` is short for `auth: {}` (every default); anything else is read as written."""
    if value == "oauth":
        return OAuthSettings()
    if isinstance(value, str):
        raise ValueError(f"'auth' must be \"oauth\" or an object of OAuth settings, got {value!r}")
    return value
