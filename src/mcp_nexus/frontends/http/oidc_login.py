"""The dashboard's login through an OpenID provider: authorization code with PKCE, state and nonce.

    GET /dashboard/oidc/login      a fresh state, nonce and PKCE verifier; 303 to the provider
    GET /dashboard/oidc/callback   the code exchanged for tokens; the ID token checked; a login opened

Why each piece: `state` (random, kept here and in a short-lived cookie of this browser) ties the
callback to a login this browser started, so nobody can log a victim in as themselves (login
CSRF); PKCE (S256) makes a stolen code useless without the verifier that never left the gateway;
`nonce` ties the ID token to this login (a token replayed from another login does not carry it).
The ID token is checked with PyJWT against the provider's keys (identity/jwks.py, the same
bounded cache the resource server uses): an asymmetric algorithm, the signature, `iss`, `aud` =
our client id (and `azp` when several audiences), `exp`/`iat` with the configured skew, `nonce`.

Its claims then give the role (admin_roles.py: user, groups, verified email); a user without one
is refused, and a login opens (session_cookie.py) with a SameSite=Lax cookie (the browser comes
back from the provider's site), Secure unless the gateway is reached over loopback http.
Pending logins are bounded (oldest dropped) and expire after PENDING_MAX_AGE.

No OIDC client library: discovery, the JWKS cache and JWT checks are already here
(identity/), and what is left is two requests and a dozen lines of checks.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx2
import jwt
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from mcp_nexus.config.dashboard_login import CALLBACK_PATH, DashboardLoginSettings
from mcp_nexus.config.identity import ALLOWED_ALGORITHMS
from mcp_nexus.frontends.http.admin_roles import role_for, verified_email
from mcp_nexus.frontends.http.security import is_loopback
from mcp_nexus.frontends.http.session_cookie import LoginSessions, cookie_header
from mcp_nexus.identity.issuer_metadata import discover, json_answer
from mcp_nexus.identity.jwks import JwksCache
from mcp_nexus.identity.token_errors import IssuerUnavailable, TokenRejected

logger = logging.getLogger(__name__)

LOGIN_PATH = "/dashboard/oidc/login"
STATE_COOKIE = "nexus_oidc_state"
PENDING_MAX_AGE = 600.0  # seconds a started login may take at the provider
PENDING_MAX = 256  # logins started at once; the oldest is forgotten beyond
_REQUIRED_CLAIMS = ["exp", "iat", "iss", "aud", "sub"]


class LoginFailed(Exception):
    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message, self.status = message, status


@dataclass(frozen=True, slots=True)
class Pending:
    verifier: str
    nonce: str
    redirect_uri: str
    started: float


def _s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def secure_cookie(request: Request) -> bool:
    """Secure, unless the browser reaches the gateway over plain http on loopback (no TLS to be had)."""
    return request.url.scheme == "https" or not is_loopback(request.url.hostname or "")


class OidcLogin:
    """The provider login of one gateway: its pending logins, the provider's metadata and keys."""

    def __init__(
        self,
        settings: DashboardLoginSettings,
        logins: LoginSessions,
        error_page: Callable[[str, int], Response],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.logins = logins
        self.error_page = error_page
        self._clock = clock
        self.client = httpx2.AsyncClient(timeout=settings.fetch_timeout, follow_redirects=False)
        self._metadata: dict[str, Any] | None = None
        self.keys = JwksCache(self.client, self._jwks_uri)
        self._pending: OrderedDict[str, Pending] = OrderedDict()

    async def metadata(self) -> dict[str, Any]:
        if self._metadata is None:
            metadata = await discover(self.client, self.settings.issuer)
            for key in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
                if not isinstance(metadata.get(key), str):
                    raise IssuerUnavailable(f"the metadata of {self.settings.issuer} names no {key}")
            self._metadata = metadata
        return self._metadata

    async def _jwks_uri(self) -> str:
        return str((await self.metadata())["jwks_uri"])

    def redirect_uri(self, request: Request) -> str:
        # HttpGuard has checked the Host: it names this gateway.
        return self.settings.redirect_uri or str(request.base_url).rstrip("/") + CALLBACK_PATH

    # -- the two routes -------------------------------------------------------------------------

    async def start(self, request: Request) -> Response:
        try:
            metadata = await self.metadata()
        except TokenRejected as exc:
            return self.error_page(f"The identity provider cannot be reached: {exc.description}", 502)
        state, nonce, verifier = (secrets.token_urlsafe(32) for _ in range(3))
        redirect_uri = self.redirect_uri(request)
        self._forget_stale()
        self._pending[state] = Pending(verifier, nonce, redirect_uri, self._clock())
        while len(self._pending) > PENDING_MAX:
            self._pending.popitem(last=False)
        query = urlencode(
            {
                "response_type": "code",
                "client_id": self.settings.client_id,
                "redirect_uri": redirect_uri,
                "scope": " ".join(self.settings.scopes),
                "state": state,
                "nonce": nonce,
                "code_challenge": _s256(verifier),
                "code_challenge_method": "S256",
            }
        )
        endpoint = str(metadata["authorization_endpoint"])
        response = RedirectResponse(f"{endpoint}{'&' if '?' in endpoint else '?'}{query}", status_code=303)
        response.set_cookie(
            STATE_COOKIE,
            state,
            max_age=int(PENDING_MAX_AGE),
            path=CALLBACK_PATH,
            secure=secure_cookie(request),
            httponly=True,
            samesite="lax",
        )
        return response

    async def callback(self, request: Request) -> Response:
        try:
            who, role, name, groups = await self._finish(request)
        except LoginFailed as failed:
            logger.info("dashboard login through the provider refused: %s", failed.message)
            response = self.error_page(failed.message, failed.status)
            response.delete_cookie(STATE_COOKIE, path=CALLBACK_PATH)
            return response
        value = self.logins.create(
            who,
            role,
            name=name,
            max_age=self.settings.session_max_age,
            issuer=self.settings.issuer,
            groups=groups,
        )
        response = RedirectResponse("/", status_code=303)
        response.headers.append(
            "set-cookie",
            cookie_header(
                value,
                secure=secure_cookie(request),
                max_age=min(self.settings.session_max_age, self.logins.max_age),
                same_site="Lax",
            ),
        )
        response.delete_cookie(STATE_COOKIE, path=CALLBACK_PATH)
        return response

    def routes(self) -> list[Route]:
        return [
            Route(LOGIN_PATH, self.start, methods=["GET"]),
            Route(CALLBACK_PATH, self.callback, methods=["GET"]),
        ]

    async def aclose(self) -> None:
        await self.client.aclose()

    # -- the checks -----------------------------------------------------------------------------

    def _forget_stale(self) -> None:
        now = self._clock()
        while self._pending and now - next(iter(self._pending.values())).started > PENDING_MAX_AGE:
            self._pending.popitem(last=False)

    async def _finish(self, request: Request) -> tuple[str, Any, str | None, tuple[str, ...]]:
        params = request.query_params
        if "error" in params:
            described = params.get("error_description") or params["error"]
            raise LoginFailed(f"The identity provider refused the login: {described}", 401)
        state, code = params.get("state"), params.get("code")
        if not state or not code:
            raise LoginFailed("The provider's answer has no code or state: start the login again.")
        bound = request.cookies.get(STATE_COOKIE, "")
        if not hmac.compare_digest(bound.encode(), state.encode()):
            raise LoginFailed("This login was not started in this browser (state mismatch): start it again.")
        self._forget_stale()
        pending = self._pending.pop(state, None)
        if pending is None:
            raise LoginFailed("This login has expired or was already used: start it again.")
        try:
            tokens = await self._exchange(code, pending)
            claims = await self.check_id_token(tokens.get("id_token"), pending.nonce)
        except TokenRejected as exc:
            raise LoginFailed(f"The login could not be completed: {exc.description}", exc.status) from None
        subject = str(claims["sub"])
        groups = claims.get(self.settings.groups_claim)
        names = tuple(g for g in groups if isinstance(g, str)) if isinstance(groups, list) else ()
        email = verified_email(claims)
        role = role_for(self.settings, subject, names, email)
        if role is None:
            raise LoginFailed(
                f"The account {subject!r} has no role on this gateway (gateway.dashboard_login.roles).", 403
            )
        name = claims.get("name") or email or claims.get("preferred_username")
        return f"user:{subject}", role, str(name) if name else None, names

    async def _exchange(self, code: str, pending: Pending) -> dict[str, Any]:
        endpoint = str((await self.metadata())["token_endpoint"])
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": pending.redirect_uri,
            "code_verifier": pending.verifier,
        }
        secret = self.settings.client_secret
        headers = {"accept": "application/json"}
        if secret is None:
            form["client_id"] = self.settings.client_id  # a public client: PKCE is its proof
            request = self.client.post(endpoint, data=form, headers=headers)
        else:
            auth = (self.settings.client_id, secret)
            request = self.client.post(endpoint, data=form, auth=auth, headers=headers)
        try:
            return await json_answer(request, endpoint)
        except IssuerUnavailable as exc:
            raise TokenRejected(f"the token endpoint refused the code ({exc.description})") from None

    async def check_id_token(self, token: Any, nonce: str) -> dict[str, Any]:
        """The ID token's claims when it is the provider's, for us, in date and for this login."""
        if not isinstance(token, str):
            raise TokenRejected("the provider answered no id_token (is 'openid' among the scopes?)")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            raise TokenRejected("the id_token is not a JWT") from None
        alg = header.get("alg")
        if alg not in ALLOWED_ALGORITHMS:
            raise TokenRejected(
                f"the id_token is signed with {alg!r}; only asymmetric algorithms are accepted"
            )
        kid = header.get("kid")
        key = await self.keys.key(kid if isinstance(kid, str) else None)
        if not key.fits(alg):
            raise TokenRejected(f"the id_token's algorithm {alg!r} does not fit its key")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=[alg],
                audience=self.settings.client_id,
                issuer=self.settings.issuer,
                leeway=self.settings.clock_skew,
                options={"require": _REQUIRED_CLAIMS},
            )
        except jwt.ExpiredSignatureError:
            raise TokenRejected("the id_token has expired") from None
        except jwt.InvalidAudienceError:
            raise TokenRejected(f"the id_token is not for client {self.settings.client_id!r}") from None
        except jwt.InvalidIssuerError:
            raise TokenRejected(f"the id_token is not from {self.settings.issuer}") from None
        except jwt.InvalidSignatureError:
            raise TokenRejected("the id_token's signature does not verify") from None
        except jwt.InvalidTokenError as exc:
            raise TokenRejected(f"the id_token is not valid ({exc})") from None
        audience = claims["aud"]
        if isinstance(audience, list) and len(audience) > 1 and claims.get("azp") != self.settings.client_id:
            raise TokenRejected("the id_token names several audiences but another authorized party (azp)")
        if not hmac.compare_digest(str(claims.get("nonce", "")).encode(), nonce.encode()):
            raise TokenRejected("the id_token's nonce is not this login's (a replayed token?)")
        return claims
