"""The dashboard's login cookie: proof that the browser was given the token, never the token itself.

The value is an HMAC of a per-process random key over the token, so it cannot be turned
back into the token, and every session ends when the gateway restarts (or the token
changes). The cookie is HttpOnly (page scripts cannot read it) and SameSite=Strict (no
other site's page can make the browser send it); see docs/DASHBOARD.md.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

COOKIE_NAME = "nexus_session"

_PROCESS_KEY = secrets.token_bytes(32)


def session_value(token: str) -> str:
    return hmac.new(_PROCESS_KEY, token.encode(), hashlib.sha256).hexdigest()


def valid_session(token: str, value: str) -> bool:
    return hmac.compare_digest(session_value(token).encode(), value.encode())


def cookie_header(token: str, *, secure: bool) -> str:
    parts = [f"{COOKIE_NAME}={session_value(token)}", "Path=/", "HttpOnly", "SameSite=Strict"]
    if secure:
        parts.append("Secure")
    return "; ".join(parts)


def clearing_cookie_header() -> str:
    return f"{COOKIE_NAME}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"
