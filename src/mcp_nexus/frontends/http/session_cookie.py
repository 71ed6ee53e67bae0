"""The dashboard's login cookie: one random value per login, revoked at logout; and login throttling.

A login (the right token on the login form) gets a fresh random value (`LoginSessions.create`);
the gateway keeps only its SHA-256, so neither the token nor a live cookie can be read back
from memory. `POST /logout` revokes the value it is sent with: a copy of that cookie stops
working at once. A login also ends after `max_age` seconds, when more than `max_sessions`
logins are open (the oldest first), and when the gateway restarts.

Each login remembers who it is and its role (`Login`): a token login is the operator, `admin`; a
login through the identity provider (oidc_login.py) is `user:<sub>` with the role its claims map
to (gateway.dashboard_login.roles), and lasts at most that section's `session_max_age`.

The cookie is HttpOnly (page scripts cannot read it). A token login's is SameSite=Strict (no
other site's page can make the browser send it); a provider login's is SameSite=Lax, since the
browser arrives from the provider's site and a Strict cookie set at the end of that redirect
chain would not be sent with the next page; every change is a POST, which Lax never carries
cross-site (and the guard checks Origin). See docs/DASHBOARD.md and docs/SECURITY.md.

`LoginThrottle` counts failed logins per client address: after `failures_per_minute` of them
in the last minute, the next attempt is answered 429 with Retry-After, unchecked.
"""

from __future__ import annotations

import hashlib
import math
import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

COOKIE_NAME = "nexus_session"
LOGIN_MAX_AGE = 12 * 3600.0  # seconds a login lasts
MAX_LOGINS = 1000  # logins open at once; the oldest is dropped beyond
THROTTLE_WINDOW = 60.0
THROTTLE_MAX_CLIENTS = 10_000  # addresses remembered; the least recently failed are forgotten first


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).digest()


Role = Literal["admin", "viewer"]
OPERATOR = "operator"  # who a token login (and the static token itself) is in the audit log


@dataclass(frozen=True, slots=True)
class Login:
    """One open login: who it is, its role, when it opened (the sessions' clock) and its own lifetime."""

    who: str = OPERATOR
    role: Role = "admin"
    name: str | None = None  # what the page shows (the provider's name or email claim), None: `who`
    opened: float = 0.0
    max_age: float | None = None  # None: the sessions' max_age
    issuer: str | None = None  # a provider login's issuer and the user's groups (for per-user rules)
    groups: tuple[str, ...] = ()

    @property
    def provider(self) -> bool:
        return self.who != OPERATOR


class LoginSessions:
    """The open dashboard logins of one gateway: cookie values by their SHA-256."""

    def __init__(
        self,
        *,
        max_age: float = LOGIN_MAX_AGE,
        max_sessions: int = MAX_LOGINS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_age = max_age
        self.max_sessions = max_sessions
        self._clock = clock
        self._opened: OrderedDict[bytes, Login] = OrderedDict()

    def __len__(self) -> int:
        return len(self._opened)

    def create(
        self,
        who: str = OPERATOR,
        role: Role = "admin",
        *,
        name: str | None = None,
        max_age: float | None = None,
        issuer: str | None = None,
        groups: tuple[str, ...] = (),
    ) -> str:
        value = secrets.token_urlsafe(32)
        self._opened[_digest(value)] = Login(who, role, name, self._clock(), max_age, issuer, groups)
        while len(self._opened) > self.max_sessions:
            self._opened.popitem(last=False)
        return value

    def get(self, value: str) -> Login | None:
        """The open login a cookie value names, None when it is unknown, revoked or expired."""
        # A dict lookup by a hash of the value: its timing says nothing about a live value.
        key = _digest(value)
        login = self._opened.get(key)
        if login is None:
            return None
        max_age = self.max_age if login.max_age is None else min(login.max_age, self.max_age)
        if self._clock() - login.opened > max_age:
            del self._opened[key]
            return None
        return login

    def valid(self, value: str) -> bool:
        return self.get(value) is not None

    def revoke(self, value: str) -> bool:
        return self._opened.pop(_digest(value), None) is not None


class LoginThrottle:
    """Failed logins per client address in a sliding minute."""

    def __init__(
        self,
        failures_per_minute: int,
        *,
        window: float = THROTTLE_WINDOW,
        max_clients: int = THROTTLE_MAX_CLIENTS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = failures_per_minute
        self.window = window
        self.max_clients = max_clients
        self._clock = clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def retry_after(self, client: str) -> int | None:
        """Seconds until `client` may try again, or None when it may now."""
        failures = self._failures.get(client)
        if failures is None:
            return None
        now = self._clock()
        while failures and now - failures[0] >= self.window:
            failures.popleft()
        if not failures:
            del self._failures[client]
            return None
        if len(failures) < self.limit:
            return None
        return max(1, math.ceil(failures[0] + self.window - now))

    def failed(self, client: str) -> None:
        failures = self._failures.pop(client, None) or deque(maxlen=self.limit)
        failures.append(self._clock())
        self._failures[client] = failures  # most recently failed last
        while len(self._failures) > self.max_clients:
            self._failures.popitem(last=False)

    def succeeded(self, client: str) -> None:
        self._failures.pop(client, None)


def cookie_header(
    value: str,
    *,
    secure: bool,
    max_age: float = LOGIN_MAX_AGE,
    same_site: Literal["Strict", "Lax"] = "Strict",
) -> str:
    parts = [
        f"{COOKIE_NAME}={value}",
        "Path=/",
        "HttpOnly",
        f"SameSite={same_site}",
        f"Max-Age={int(max_age)}",
    ]
    if secure:
        parts.append("Secure")
    return "; ".join(parts)


def clearing_cookie_header() -> str:
    return f"{COOKIE_NAME}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"
