"""The dashboard login's ID token checks and its config's errors, each with its exact message.

The provider's side is a real HTTP server on 127.0.0.1 (discovery document and JWKS) and tokens
signed with a real RSA key by PyJWT; the checks are OidcLogin's own (frontends/http/oidc_login.py).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from pydantic import ValidationError
from starlette.responses import PlainTextResponse

from mcp_nexus.config.dashboard_login import DashboardLoginSettings
from mcp_nexus.frontends.http.admin_roles import role_for
from mcp_nexus.frontends.http.oidc_login import OidcLogin
from mcp_nexus.frontends.http.session_cookie import LoginSessions
from mcp_nexus.identity.token_errors import TokenRejected

KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
CLIENT = "nexus-dashboard"


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(KEY.public_key()))
    jwks = {"keys": [{**public, "kid": "k1", "alg": "RS256", "use": "sig"}]}

    class Provider(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            base = f"http://127.0.0.1:{self.server.server_address[1]}"
            documents: dict[str, Any] = {
                "/.well-known/openid-configuration": {
                    "issuer": base,
                    "authorization_endpoint": base + "/auth",
                    "token_endpoint": base + "/token",
                    "jwks_uri": base + "/jwks",
                },
                "/jwks": jwks,
            }
            body = json.dumps(documents.get(self.path, {})).encode()
            self.send_response(200 if self.path in documents else 404)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Provider)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _login(issuer: str) -> OidcLogin:
    settings = DashboardLoginSettings(issuer=issuer, client_id=CLIENT, roles={"admin": ["user:alice"]})
    return OidcLogin(settings, LoginSessions(), lambda message, status: PlainTextResponse(message, status))


def _token(issuer: str, *, key: Any = KEY, headers: dict[str, Any] | None = None, **claims: Any) -> str:
    now = int(time.time())
    payload = {"iss": issuer, "aud": CLIENT, "sub": "alice", "iat": now, "exp": now + 300, "nonce": "n-1"}
    payload.update(claims)
    payload = {k: v for k, v in payload.items() if v is not None}
    return jwt.encode(payload, key, algorithm="RS256", headers={"kid": "k1", **(headers or {})})


async def test_a_good_id_token_gives_its_claims(issuer: str) -> None:
    login = _login(issuer)
    try:
        claims = await login.check_id_token(_token(issuer), "n-1")
    finally:
        await login.aclose()
    assert claims["sub"] == "alice"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"nonce": "n-other"}, "the id_token's nonce is not this login's (a replayed token?)"),
        ({"aud": "someone-else"}, "the id_token is not for client 'nexus-dashboard'"),
        ({"iss": "http://127.0.0.1:1"}, "the id_token is not from {issuer}"),
        ({"exp": int(time.time()) - 3600}, "the id_token has expired"),
        ({"sub": None}, 'the id_token is not valid (Token is missing the "sub" claim)'),
        ({"aud": [CLIENT, "other"], "azp": "other"}, "the id_token names several audiences but another"),
        ({"key": OTHER_KEY}, "the id_token's signature does not verify"),
        (
            {"headers": {"kid": "k-unknown"}},
            "the token's signing key (kid 'k-unknown') is not one of the issuer's",
        ),
    ],
)
async def test_a_bad_id_token_is_refused_saying_why(
    issuer: str, change: dict[str, Any], message: str
) -> None:
    login = _login(issuer)
    try:
        with pytest.raises(TokenRejected) as refused:
            await login.check_id_token(_token(issuer, **change), "n-1")
    finally:
        await login.aclose()
    assert refused.value.description.startswith(message.format(issuer=issuer)), refused.value.description


async def test_a_shared_secret_algorithm_is_refused(issuer: str) -> None:
    login = _login(issuer)
    forged = jwt.encode(
        {"iss": issuer, "aud": CLIENT, "sub": "alice"},
        "a-guessable-shared-secret-of-32-bytes!",
        algorithm="HS256",
    )
    try:
        with pytest.raises(TokenRejected, match="only asymmetric algorithms are accepted"):
            await login.check_id_token(forged, "n-1")
    finally:
        await login.aclose()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"roles": {"admin": ["ops"]}}, "'ops' must be user:<sub>, group:<name>, email:<address> or *"),
        ({"roles": {"viewer": ["group:"]}}, "'group:' names nobody after group:"),
        ({"scopes": ["profile"]}, "scopes must include 'openid'"),
        ({"redirect_uri": "http://127.0.0.1:8787/callback"}, "whose path is /dashboard/oidc/callback"),
        ({"issuer": "ftp://idp"}, "issuer must be an http(s) URL"),
        ({"roles": {"owner": ["*"]}}, "Extra inputs are not permitted"),
    ],
)
def test_a_bad_config_is_refused_naming_the_problem(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(
        ValidationError, match=message.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")
    ):
        DashboardLoginSettings.model_validate({"issuer": "http://127.0.0.1:9", "client_id": CLIENT, **fields})


def test_roles_admin_wins_and_email_must_be_listed() -> None:
    settings = DashboardLoginSettings.model_validate(
        {
            "issuer": "http://127.0.0.1:9",
            "client_id": CLIENT,
            "roles": {"admin": ["group:ops", "email:Boss@Example.com"], "viewer": ["*"]},
        }
    )
    assert role_for(settings, "alice", ("ops", "eng"), None) == "admin"
    assert role_for(settings, "carol", (), "boss@example.com") == "admin"
    assert role_for(settings, "dave", ("eng",), None) == "viewer"
    strict = settings.model_copy(update={"roles": settings.roles.model_copy(update={"viewer": []})})
    assert role_for(strict, "dave", ("eng",), None) is None
