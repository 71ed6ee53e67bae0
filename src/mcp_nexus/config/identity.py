"""`gateway.auth`: the HTTP frontend as an OAuth 2.1 resource server (docs/IDENTITY.md).

    gateway:
      auth:
        resource: https://nexus.example.com/mcp   # this server's canonical URI: the tokens' audience
        issuer: https://idp.example.com           # the authorization server that issues them
        required_scopes: [mcp:tools]

Tokens are validated as JWTs against the issuer's keys (its JWKS, found through its metadata
unless `jwks_uri` names it), or, with `introspection_endpoint`, by asking the issuer (RFC 7662).
Without this block the gateway knows only its static `gateway.token`, as before.
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, ValidationInfo, field_validator, model_validator

from mcp_nexus.config.schema_base import Strict

# Asymmetric algorithms only: a shared-secret (HS*) key would let anyone holding the JWKS mint tokens.
ALLOWED_ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)


def _absolute_http_url(value: str, what: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{what} must be an absolute http(s) URL, got {value!r}")
    if parts.fragment:
        raise ValueError(f"{what} must not have a fragment (#...), got {value!r}")
    return value


class ResourceServerSettings(Strict):
    """Who may call `/mcp` with an OAuth access token, and how such a token is checked."""

    resource: str = Field(
        description="this gateway's MCP endpoint as clients reach it (e.g. https://nexus.example.com/mcp): "
        "the audience tokens must name (RFC 8707) and the `resource` of its metadata (RFC 9728)"
    )
    issuer: str = Field(description="the authorization server's issuer identifier; tokens must name it (iss)")
    audiences: list[str] = Field(
        default_factory=list,
        description="further audiences accepted besides `resource` (an IdP that names an API id instead)",
    )
    required_scopes: list[str] = Field(
        default_factory=list, description="scopes a token needs for /mcp (else 403 insufficient_scope)"
    )
    admin_scope: str | None = Field(
        default=None,
        description="a token with this scope may also use the admin API, metrics and dashboard APIs; "
        "unset: those keep needing the static gateway.token",
    )
    jwks_uri: str | None = Field(
        default=None, description="the issuer's keys; default: jwks_uri of its metadata (discovered once)"
    )
    introspection_endpoint: str | None = Field(
        default=None, description="validate tokens by asking the issuer (RFC 7662) instead of as JWTs"
    )
    introspection_client_id: str | None = None
    introspection_client_secret: str | None = Field(default=None, repr=False)
    algorithms: list[str] = Field(default_factory=lambda: ["RS256", "ES256", "PS256", "EdDSA"])
    clock_skew: float = Field(default=60.0, ge=0, le=600, description="seconds of leeway on exp and nbf")
    jwks_refresh_interval: float = Field(
        default=30.0,
        ge=0,
        description="least seconds between two JWKS fetches caused by an unknown key id (bounds what "
        "tokens with made-up key ids can cost)",
    )
    jwks_max_age: float = Field(default=3600.0, gt=0, description="seconds the issuer's keys are kept")
    token_cache_entries: int = Field(
        default=10_000,
        ge=0,
        description="validated tokens remembered until they expire (0: validate every request)",
    )
    introspection_cache_seconds: float = Field(
        default=30.0,
        ge=0,
        description="seconds an introspection answer is reused (bounds a revocation's delay)",
    )
    groups_claim: str = Field(default="groups", description="the claim that lists the caller's groups")
    fetch_timeout: float = Field(default=5.0, gt=0, description="seconds for one request to the issuer")

    @field_validator("resource", "issuer")
    @classmethod
    def _check_url(cls, value: str, info: ValidationInfo) -> str:
        return _absolute_http_url(value, f"gateway.auth.{info.field_name}")

    @field_validator("jwks_uri", "introspection_endpoint")
    @classmethod
    def _check_optional_url(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return value
        return _absolute_http_url(value, f"gateway.auth.{info.field_name}")

    @field_validator("algorithms")
    @classmethod
    def _check_algorithms(cls, value: list[str]) -> list[str]:
        unknown = [alg for alg in value if alg not in ALLOWED_ALGORITHMS]
        if unknown or not value:
            raise ValueError(
                f"gateway.auth.algorithms: {', '.join(unknown) or 'none given'} not allowed; "
                f"choose from {', '.join(ALLOWED_ALGORITHMS)} (asymmetric only)"
            )
        return value

    @model_validator(mode="after")
    def _check_introspection_client(self) -> ResourceServerSettings:
        if self.introspection_endpoint and not (
            self.introspection_client_id and self.introspection_client_secret
        ):
            raise ValueError(
                "gateway.auth.introspection_endpoint needs introspection_client_id and "
                "introspection_client_secret (the gateway authenticates to the issuer, RFC 7662 §2.1)"
            )
        return self

    @property
    def validation(self) -> Literal["jwt", "introspection"]:
        return "introspection" if self.introspection_endpoint else "jwt"

    @property
    def accepted_audiences(self) -> list[str]:
        return [self.resource, *self.audiences]
