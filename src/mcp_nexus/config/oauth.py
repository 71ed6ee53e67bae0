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

      reports:                           # machine to machine: no login, READY at start
        transport: http
        url: https://reports.example.com/mcp
        auth:
          grant: client_credentials
          client_id: nexus-reports
          token_endpoint_auth_method: private_key_jwt
          private_key_file: /run/secrets/nexus-reports.pem
          signing_algorithm: ES256
          issuer: https://auth.example.com

Everything left out is discovered (RFC 9728 protected-resource metadata, RFC 8414 server
metadata) or chosen by the authorization server (dynamic registration, RFC 7591).

The grants: `authorization_code` (a person logs in once, `nexus auth login`), and two that need
no person, so the server connects at start: `client_credentials` (the gateway is the client and
the resource owner; its secret or a signed JWT, RFC 7523, authenticates it) and
`identity_assertion` (enterprise-managed authorization: an ID token from the enterprise
identity provider is exchanged there for an ID-JAG, RFC 8693, which the MCP server's
authorization server takes as a jwt-bearer grant, RFC 7523).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from mcp_nexus.config.schema_base import Strict

TokenEndpointAuthMethod = Literal["none", "client_secret_post", "client_secret_basic", "private_key_jwt"]
Grant = Literal["authorization_code", "client_credentials", "identity_assertion"]
# What PyJWT (with `cryptography`) signs a client assertion with: asymmetric algorithms only, a
# shared-secret HMAC would not be private_key_jwt.
SIGNING_ALGORITHMS = (
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
)  # fmt: skip


def _check_url(field: str, value: str | None) -> str | None:
    if value is not None and not value.startswith(("http://", "https://")):
        raise ValueError(f"'{field}' must be an http:// or https:// URL, got {value!r}")
    return value


class IdentityProviderSettings(Strict):
    """The enterprise identity provider of `grant: identity_assertion`: where an ID token becomes an ID-JAG."""

    token_endpoint: str = Field(description="the IdP's token endpoint (RFC 8693 token exchange)")
    client_id: str = Field(description="this gateway's client at the IdP")
    client_secret: str | None = Field(
        default=None,
        repr=False,
        description="its secret at the IdP, if the IdP wants one (client_secret_post)",
    )
    id_token: str | None = Field(
        default=None, repr=False, description="the ID token to exchange (e.g. ${ID_TOKEN})"
    )
    id_token_file: str | None = Field(
        default=None,
        description="a file holding the ID token, read at each exchange (a sign-in agent keeps it fresh)",
    )

    @field_validator("token_endpoint")
    @classmethod
    def _check_endpoint(cls, value: str) -> str:
        _check_url("identity_provider.token_endpoint", value)
        return value

    @model_validator(mode="after")
    def _one_id_token(self) -> IdentityProviderSettings:
        if (self.id_token is None) == (self.id_token_file is None):
            raise ValueError("'identity_provider' needs exactly one of 'id_token' and 'id_token_file'")
        return self


class TokenExchangeSettings(Strict):
    """A per-user server's RFC 8693 token exchange: each caller's access token traded at the
    identity provider for a token whose audience is this server (no per-user login)."""

    token_endpoint: str = Field(description="the identity provider's token endpoint")
    client_id: str = Field(description="this gateway's client at the identity provider")
    client_secret: str | None = Field(
        default=None, repr=False, description="its secret there (sent as client_secret_basic)"
    )
    resource: str | None = Field(
        default=None, description="the `resource` asked for (RFC 8707); None = the server's URL"
    )
    audience: str | None = Field(
        default=None, description="the `audience` asked for, where the IdP wants one"
    )
    scope: str | None = Field(default=None, description="the scope asked for; None = the IdP's choice")

    @field_validator("token_endpoint")
    @classmethod
    def _check_endpoint(cls, value: str) -> str:
        _check_url("token_exchange.token_endpoint", value)
        return value


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
    grant: Grant = Field(
        default="authorization_code",
        description="authorization_code: a person logs in once; client_credentials and identity_assertion "
        "need no person (the server is READY at start)",
    )
    private_key_file: str | None = Field(
        default=None,
        description="PEM private key signing the client assertion of token_endpoint_auth_method "
        "private_key_jwt (read at each connect, never logged)",
    )
    signing_algorithm: str = Field(
        default="RS256",
        description=f"the client assertion's algorithm: one of {', '.join(SIGNING_ALGORITHMS)}",
    )
    issuer: str | None = Field(
        default=None,
        description="the authorization server's issuer: credentials go only to it (required for "
        "identity_assertion; recommended for client_credentials)",
    )
    identity_provider: IdentityProviderSettings | None = Field(
        default=None, description="grant identity_assertion: the enterprise IdP issuing the ID-JAG"
    )
    per_user: bool = Field(
        default=False,
        description="each user (a caller with a token naming a subject) logs in to this server once and "
        "calls it with their own token; the operator's login only lists its tools and serves callers "
        "without a user (docs/OAUTH.md, per-user logins)",
    )
    max_user_sessions: int = Field(
        default=64, ge=1, description="per_user: at most this many users' sessions open at once (LRU)"
    )
    user_session_idle_s: float = Field(
        default=600.0, gt=0, description="per_user: a user's session unused this long is closed"
    )
    token_exchange: TokenExchangeSettings | None = Field(
        default=None,
        description="per_user: trade each caller's access token at the identity provider (RFC 8693) "
        "instead of a per-user login",
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
        return _check_url("redirect_uri", value)

    @field_validator("issuer")
    @classmethod
    def _check_issuer(cls, value: str | None) -> str | None:
        return _check_url("issuer", value)

    @field_validator("signing_algorithm")
    @classmethod
    def _check_algorithm(cls, value: str) -> str:
        if value not in SIGNING_ALGORITHMS:
            raise ValueError(
                f"'signing_algorithm' must be one of {', '.join(SIGNING_ALGORITHMS)}, got {value!r}"
            )
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
        if (self.token_endpoint_auth_method == "private_key_jwt") != (self.private_key_file is not None):
            raise ValueError(
                "token_endpoint_auth_method 'private_key_jwt' and 'private_key_file' go together"
                " (the key signs the client assertion)"
            )
        if self.token_exchange is not None and not self.per_user:
            raise ValueError("'token_exchange' needs 'per_user: true' (it trades each user's token)")
        if self.per_user and self.token_exchange is None and self.grant != "authorization_code":
            raise ValueError(
                f"'per_user' needs grant 'authorization_code' (each user logs in) or 'token_exchange',"
                f" not grant {self.grant!r} alone"
            )
        if self.grant != "authorization_code":
            self._check_machine_grant()
        elif self.token_endpoint_auth_method == "private_key_jwt" or self.identity_provider is not None:
            raise ValueError(
                "'private_key_jwt' needs grant 'client_credentials' and 'identity_provider' needs grant"
                f" 'identity_assertion' (grant is {self.grant!r})"
            )
        return self

    def _check_machine_grant(self) -> None:
        """client_credentials and identity_assertion: a confidential client, no browser."""
        grant = self.grant
        if not self.client_id:
            raise ValueError(
                f"grant {grant!r} needs 'client_id' (a client registered at the authorization server)"
            )
        for browser_only in ("client_metadata_url", "redirect_uri"):
            if getattr(self, browser_only) is not None:
                raise ValueError(f"'{browser_only}' belongs to a login in a browser, not to grant {grant!r}")
        if self.token_endpoint_auth_method == "none":
            raise ValueError(
                f"grant {grant!r} needs a confidential client: token_endpoint_auth_method 'none'"
            )
        if grant == "client_credentials":
            if self.identity_provider is not None:
                raise ValueError(
                    "'identity_provider' needs grant 'identity_assertion', not 'client_credentials'"
                )
            if not self.client_secret and self.token_endpoint_auth_method != "private_key_jwt":
                raise ValueError(
                    "grant 'client_credentials' needs 'client_secret', or token_endpoint_auth_method"
                    " 'private_key_jwt' with 'private_key_file'"
                )
            return
        if self.token_endpoint_auth_method == "private_key_jwt":
            raise ValueError(
                "grant 'identity_assertion' authenticates with 'client_secret', not 'private_key_jwt'"
            )
        missing = [
            name
            for name, value in (
                ("client_secret", self.client_secret),
                ("issuer", self.issuer),
                ("identity_provider", self.identity_provider),
            )
            if not value
        ]
        if missing:
            raise ValueError(f"grant 'identity_assertion' needs {', '.join(repr(m) for m in missing)}")

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
