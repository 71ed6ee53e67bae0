"""The principal a validated access token names: the identity every per-caller rule keys on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a token says is calling: subject and client as the issuer names them, with their grants.

    `subject` is the resource owner (`sub`); `client_id` the OAuth client acting for it. A
    client-credentials token may name no user: then the client itself is the principal.
    """

    issuer: str
    subject: str | None
    client_id: str | None
    scopes: frozenset[str] = frozenset()
    groups: tuple[str, ...] = ()
    expires_at: float | None = None  # the token's `exp` (seconds since the epoch), None: no expiry
    claims: dict[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def key(self) -> str:
        """The stable name per-caller state is kept under: `user:<sub>`, else `client:<client_id>`.

        Subjects are unique per issuer; the gateway trusts one issuer, so the issuer is left out
        (it would only make every owner name in the data folder and the audit log longer).
        """
        if self.subject:
            return f"user:{self.subject}"
        return f"client:{self.client_id or '-'}"

    def has_scopes(self, required: list[str] | tuple[str, ...]) -> list[str]:
        """The required scopes this principal lacks (empty: it has them all)."""
        return [scope for scope in required if scope not in self.scopes]


class PrincipalUser(AuthenticatedUser):
    """The SDK's authenticated user carrying our principal.

    Set as the ASGI scope's `user`: the SDK's session manager then binds each handshake-era
    session to the (client, issuer, subject) that opened it and answers another credential's
    use of it as an unknown session; the frontends read the principal back from it.
    """

    def __init__(self, principal: Principal, token: str) -> None:
        super().__init__(
            AccessToken(
                token=token,
                client_id=principal.client_id or "",
                scopes=sorted(principal.scopes),
                expires_at=int(principal.expires_at) if principal.expires_at is not None else None,
                subject=principal.subject,
                claims={"iss": principal.issuer},
            )
        )
        self.principal = principal


def principal_of(user: Any) -> Principal | None:
    """The principal of an ASGI scope's `user` (None: no token, or the static gateway token)."""
    return user.principal if isinstance(user, PrincipalUser) else None


def _names(value: Any) -> tuple[str, ...]:
    """A claim that lists names: a JSON list, or one space-separated string (as `scope` is)."""
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, list):
        return tuple(item for item in value if isinstance(item, str))
    return ()


def principal_from_claims(claims: dict[str, Any], issuer: str, groups_claim: str = "groups") -> Principal:
    """The principal of a validated token's claims (a JWT's payload or an introspection answer).

    The client is `client_id` (RFC 9068, RFC 7662), else `azp` or `cid` as some issuers name it;
    the scopes are `scope` (a string) or `scp` (a list, Entra/Okta).
    """
    client = claims.get("client_id") or claims.get("azp") or claims.get("cid")
    subject = claims.get("sub")
    exp = claims.get("exp")
    return Principal(
        issuer=issuer,
        subject=str(subject) if subject is not None else None,
        client_id=str(client) if client is not None else None,
        scopes=frozenset(_names(claims.get("scope")) or _names(claims.get("scp"))),
        groups=_names(claims.get(groups_claim)),
        expires_at=float(exp) if isinstance(exp, int | float) else None,
        claims=claims,
    )


def scope_user(request: Any) -> Any:
    """The ASGI scope's `user` of a request (a Starlette `Request`), None for none or no request.

    Read from the scope, not `request.user`, which asserts that Starlette's own auth middleware
    is installed (ours is HttpGuard)."""
    scope = getattr(request, "scope", None)
    return scope.get("user") if isinstance(scope, dict) else None
