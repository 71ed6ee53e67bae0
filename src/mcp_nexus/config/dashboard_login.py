"""`gateway.dashboard_login`: the dashboard and admin API log in through an OpenID provider (docs/IDENTITY.md).

    gateway:
      dashboard_login:
        issuer: https://idp.example.com        # OpenID Connect issuer (its discovery document is read)
        client_id: nexus-dashboard             # a client registered with the redirect URI below
        client_secret: ${NEXUS_OIDC_SECRET}    # optional: a public client uses PKCE alone
        redirect_uri: http://127.0.0.1:8787/dashboard/oidc/callback   # default: this gateway's own
        roles:
          admin: [group:ops, user:alice]       # may act: restart servers, clear the cache, ...
          viewer: ["*"]                        # may read what the dashboard shows

A role entry is `user:<sub>`, `group:<name>` (from `groups_claim`), `email:<address>` (a verified
email) or `*` (anyone the provider vouches for). `admin` wins over `viewer`; a login that matches
neither is refused. The static `gateway.token` keeps working and is `admin`; an access token sent
as a bearer to the admin API (gateway.auth) gets its role the same way (its admin scope: admin).
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from mcp_nexus.config.schema_base import Strict

Role = Literal["admin", "viewer"]
ROLE_PREFIXES = ("user:", "group:", "email:")
CALLBACK_PATH = "/dashboard/oidc/callback"


def check_role_entry(entry: str) -> str | None:
    """What is wrong with one entry of a role's list, None when it is fine."""
    if entry == "*":
        return None
    prefix, _, name = entry.partition(":")
    if prefix + ":" not in ROLE_PREFIXES:
        return f"{entry!r} must be user:<sub>, group:<name>, email:<address> or *"
    if not name.strip():
        return f"{entry!r} names nobody after {prefix}:"
    return None


class DashboardRoles(Strict):
    admin: list[str] = Field(default_factory=list, description="who may read and act")
    viewer: list[str] = Field(default_factory=list, description="who may read only (never secrets)")

    @field_validator("admin", "viewer")
    @classmethod
    def _check_entries(cls, value: list[str]) -> list[str]:
        problems = [problem for entry in value if (problem := check_role_entry(entry))]
        if problems:
            raise ValueError("; ".join(problems))
        return value


class DashboardLoginSettings(Strict):
    """Who may log in to the dashboard through the identity provider, and with which role."""

    issuer: str = Field(description="the OpenID provider's issuer identifier (discovery is read from it)")
    client_id: str = Field(min_length=1, description="the dashboard's client id at the provider")
    client_secret: str | None = Field(
        default=None, repr=False, description="for a confidential client (HTTP Basic); unset: PKCE only"
    )
    scopes: list[str] = Field(
        default_factory=lambda: ["openid", "profile", "email", "groups"],
        description="asked for at the login; must include openid",
    )
    redirect_uri: str | None = Field(
        default=None,
        description=f"where the provider sends the browser back; default: this gateway's {CALLBACK_PATH}",
    )
    groups_claim: str = Field(default="groups", description="the ID token claim that lists the user's groups")
    roles: DashboardRoles = Field(default_factory=DashboardRoles)
    session_max_age: float = Field(
        default=8 * 3600.0, gt=0, le=7 * 86400, description="seconds a login lasts (then log in again)"
    )
    max_sessions: int = Field(default=1000, ge=1, description="logins open at once; the oldest ends first")
    clock_skew: float = Field(default=60.0, ge=0, le=600, description="seconds of leeway on exp and iat")
    fetch_timeout: float = Field(default=5.0, gt=0, description="seconds for one request to the provider")
    label: str | None = Field(default=None, description='the login button says "Log in with <label>"')

    @field_validator("issuer")
    @classmethod
    def _check_issuer(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
            raise ValueError(
                f"gateway.dashboard_login.issuer must be an http(s) URL without query or fragment, got {value!r}"
            )
        return value

    @field_validator("redirect_uri")
    @classmethod
    def _check_redirect(cls, value: str | None) -> str | None:
        if value is None:
            return value
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path != CALLBACK_PATH:
            raise ValueError(
                f"gateway.dashboard_login.redirect_uri must be an http(s) URL whose path is {CALLBACK_PATH}, "
                f"got {value!r}"
            )
        return value

    @field_validator("scopes")
    @classmethod
    def _check_scopes(cls, value: list[str]) -> list[str]:
        if "openid" not in value:
            raise ValueError("gateway.dashboard_login.scopes must include 'openid' (an ID token is needed)")
        return value

    @property
    def provider_label(self) -> str:
        return self.label or urlsplit(self.issuer).netloc
