"""The sessions of a per-user server (`auth: {per_user: true}`): one per user, never shared.

A user's calls to such a server go over a session of their own that carries their login
(upstream/oauth/per_user.py), opened on their first call. The sessions of one server are
bounded (`max_user_sessions`): opening one more closes the least recently used idle one, and
when every one is busy the call is refused rather than the bound exceeded. A session unused for
`user_session_idle_s` is closed. Every request a user makes of the server goes over it: tools,
resources, prompts and completions (`as_user`). The server's own session (the operator's login)
stays what lists its tools, resources and prompts, and serves callers without a user.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx2
from mcp.shared.dispatcher import ProgressFnT

from mcp_nexus.errors import PermissionDeniedError, UnavailableError
from mcp_nexus.events import ServerStateChanged
from mcp_nexus.upstream.callers_of import CallersOf
from mcp_nexus.upstream.input_required import InputAnswerer
from mcp_nexus.upstream.negotiate import era_for
from mcp_nexus.upstream.oauth.per_user import UserLoginRequired, user_logins
from mcp_nexus.upstream.oauth.token_exchange import ExchangedTokenAuth, ExchangedTokens, TokenExchangeFailed
from mcp_nexus.upstream.session import CallRound, Session, ToolOutcome
from mcp_nexus.upstream.session_reports import SessionReports
from mcp_nexus.upstream.session_types import session_type
from mcp_nexus.upstream.state import UpstreamState
from mcp_nexus.upstream.upstream import Upstream, UpstreamUnavailable

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass
class _UserSession:
    session: Session
    refused: list[str]  # why its login was refused, once it was (a revoked token, a refused refresh)
    last_used: float = field(default_factory=time.monotonic)
    busy: int = 0  # calls in flight on it: never closed under them


class UserSessions:
    """One server's per-user sessions, by identity, least recently used first."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream
        self.config = upstream.config
        self._sessions: OrderedDict[str, _UserSession] = OrderedDict()
        self._opening: dict[str, asyncio.Task[tuple[Session, list[str]]]] = {}
        self._lock = asyncio.Lock()  # the bound is checked and a slot taken as one step
        self._sweeper: asyncio.Task[None] | None = None
        self.unsubscribe: Callable[[], None] = lambda: None  # from the server's state changes
        # token_exchange: each user's latest access token, and what it was exchanged for
        self.subject_tokens: dict[str, str] = {}
        self.exchanged = ExchangedTokens()

    @property
    def open_count(self) -> int:
        return len(self._sessions)

    def identities(self) -> list[str]:
        return list(self._sessions)

    @contextlib.asynccontextmanager
    async def session(self, identity: str) -> AsyncIterator[Session]:
        """This user's session, opened on first need; raises UserLoginRequired without a login."""
        entry = await self._entry(identity)
        entry.busy += 1
        try:
            yield entry.session
        except Exception:
            if not entry.refused:
                raise
            # Its login no longer works: the session goes, and the user is led to a new login.
            self._forget(identity, entry)
            await entry.session.close(grace=0.5)
            raise UserLoginRequired(self.config.name, f"{identity}'s login was refused") from None
        finally:
            entry.busy -= 1
            entry.last_used = time.monotonic()

    async def _entry(self, identity: str) -> _UserSession:
        known = self._sessions.get(identity)
        if known is not None and known.session.open:
            self._sessions.move_to_end(identity)
            return known
        opening = self._opening.get(identity)
        if opening is None:  # concurrent first calls of one user share one connect
            opening = self._opening[identity] = asyncio.create_task(self._open(identity))
        try:
            session, refused = await asyncio.shield(opening)
        finally:
            if opening.done():
                self._opening.pop(identity, None)
        async with self._lock:
            entry = self._sessions.get(identity)
            if entry is not None and entry.session is session:
                return entry
            if entry is not None:
                await entry.session.close(grace=0.5)
                del self._sessions[identity]
            await self._make_room(session)
            entry = self._sessions[identity] = _UserSession(session, refused)
        self._sweep_later()
        return entry

    async def _make_room(self, opened: Session) -> None:
        limit = self._settings()[0]
        while len(self._sessions) >= limit:
            idle = next((name for name, e in self._sessions.items() if e.busy == 0), None)
            if idle is None:
                await opened.close(grace=0.5)
                raise UnavailableError(
                    f"server {self.config.name!r}: all {limit} users' sessions are busy (max_user_sessions);"
                    " try again shortly",
                    data={"server": self.config.name, "max_user_sessions": limit},
                )
            evicted = self._sessions.pop(idle)
            logger.info("server %s: closing the session of %s (max_user_sessions)", self.config.name, idle)
            await evicted.session.close(grace=0.5)

    async def _open(self, identity: str) -> tuple[Session, list[str]]:
        config = self.config
        upstream = self.upstream
        refused: list[str] = []
        reports = SessionReports(
            CallersOf(upstream, lambda caller: caller.identity == identity),  # asks only this user
            relay=lambda: upstream.relay,
            changes=upstream.changes,
            lists=upstream.lists,
            lost=lambda session, reason: self._lost(identity, session, reason),
            log_records=upstream.log_records,
        )
        session = session_type(config.transport)(
            config, reports, era=era_for(config.protocol, config.transport)
        )
        auth = self._exchanged_auth(identity) or user_logins(config).session_auth(
            config, identity, refused.append
        )
        # Read by the transport's OAuth hook (upstream/http.py): this user's login, not the server's.
        # (an attribute Session does not declare: only HTTP and SSE sessions of per-user servers have it)
        setattr(session, "user_auth", auth)  # noqa: B010
        try:
            async with asyncio.timeout(config.timeouts.connect):
                await session.start()
        except BaseException as exc:
            if refused:
                raise UserLoginRequired(config.name, f"{identity} has no usable login") from None
            if isinstance(exc, TimeoutError):
                raise ConnectionError(
                    f"server {config.name!r}: the session of {identity} did not open within"
                    f" {config.timeouts.connect:g} s"
                ) from None
            raise
        logger.info("server %s: opened the session of %s", config.name, identity)
        return session, refused

    def _exchanged_auth(self, identity: str) -> httpx2.Auth | None:
        """With token_exchange: the user's session sends what their latest token was exchanged for."""
        config = self.config
        assert config.auth is not None and config.url is not None
        settings, url = config.auth.token_exchange, config.url
        if settings is None:
            return None

        async def token(fresh: bool) -> str:
            return await self.exchanged.token(
                config.name, url, settings, self.subject_tokens[identity], fresh=fresh
            )

        return ExchangedTokenAuth(token)

    async def exchange_now(self, identity: str, subject_token: str | None) -> None:
        """token_exchange: the caller's token, exchanged before the call (a refusal is the call's error)."""
        config = self.config
        assert config.auth is not None and config.auth.token_exchange is not None and config.url is not None
        if not subject_token:
            raise PermissionDeniedError(
                f"server {config.name!r} is called with each user's exchanged token: the call needs the"
                " caller's access token (over HTTP with gateway.auth)",
                data={"server": config.name, "user": identity},
            )
        self.subject_tokens[identity] = subject_token
        try:
            await self.exchanged.token(config.name, config.url, config.auth.token_exchange, subject_token)
        except TokenExchangeFailed as exc:
            raise PermissionDeniedError(str(exc), data={"server": config.name, "user": identity}) from None

    def _forget(self, identity: str, entry: _UserSession) -> None:
        if self._sessions.get(identity) is entry:
            del self._sessions[identity]

    def _lost(self, identity: str, session: Session, reason: str) -> None:
        entry = self._sessions.get(identity)
        if entry is not None and entry.session is session:
            self._forget(identity, entry)
            logger.info("server %s: the session of %s ended: %s", self.config.name, identity, reason)

    def _settings(self) -> tuple[int, float]:
        auth = self.config.auth
        assert auth is not None
        return auth.max_user_sessions, auth.user_session_idle_s

    def _sweep_later(self) -> None:
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.create_task(self._sweep(), name=f"user-sessions-{self.config.name}")

    async def _sweep(self) -> None:
        """Close sessions idle longer than `user_session_idle_s`, until none is left."""
        while self._sessions:
            idle_s = self._settings()[1]
            await asyncio.sleep(min(idle_s / 2, 30.0))
            now = time.monotonic()
            for identity, entry in list(self._sessions.items()):
                if entry.busy == 0 and now - entry.last_used >= idle_s:
                    self._sessions.pop(identity, None)
                    logger.info("server %s: closing the idle session of %s", self.config.name, identity)
                    await entry.session.close(grace=0.5)

    async def close_user(self, identity: str) -> bool:
        """Close this user's session (they logged out: it must not keep their old token); whether one was open."""
        entry = self._sessions.pop(identity, None)
        if entry is None:
            return False
        await entry.session.close(grace=0.5)
        return True

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
        for task in list(self._opening.values()):
            task.cancel()
        entries = list(self._sessions.values())
        self._sessions.clear()
        for entry in entries:
            await entry.session.close(grace=0.5)


# By server object: dropped (and its sessions closed) when the server stops.
_pools: dict[int, UserSessions] = {}
_ENDS = (UpstreamState.STOPPED, UpstreamState.DISABLED, UpstreamState.ERROR, UpstreamState.CRASHED)


def user_sessions(upstream: Upstream) -> UserSessions:
    """The per-user sessions of this server; a new config (a reload) starts a new set."""
    pool = _pools.get(id(upstream))
    if pool is not None and pool.upstream is upstream and pool.config is upstream.config:
        return pool
    if pool is not None:
        _drop(pool)
    pool = _pools[id(upstream)] = UserSessions(upstream)

    def on_state(event: ServerStateChanged) -> None:
        if event.upstream is upstream and upstream.state in _ENDS:
            _drop(pool)

    pool.unsubscribe = upstream.events.subscribe(ServerStateChanged, on_state)
    return pool


def _drop(pool: UserSessions) -> None:
    if _pools.get(id(pool.upstream)) is pool:
        del _pools[id(pool.upstream)]
    pool.unsubscribe()
    _closing.add(task := asyncio.get_running_loop().create_task(pool.close()))
    task.add_done_callback(_closing.discard)


_closing: set[asyncio.Task[None]] = set()  # closes in progress (a task nobody holds may be collected)


async def as_user(
    upstream: Upstream,
    identity: str,
    send: Callable[[Session], Awaitable[T]],
    *,
    capabilities: dict[str, Any] | None,
    subject_token: str | None = None,
) -> T:
    """`send` over this user's own session (any method: tools/call, resources/read, prompts/get,
    completion/complete); without their login, the error that leads to it."""
    config = upstream.config
    pool = user_sessions(upstream)
    if config.auth is not None and config.auth.token_exchange is not None:
        await pool.exchange_now(identity, subject_token)
    try:
        async with pool.session(identity) as session:
            return await send(session)
    except UserLoginRequired:
        raise await user_logins(config).login_required(config, identity, capabilities) from None
    except ConnectionError as exc:
        raise UpstreamUnavailable(str(exc)) from exc


async def call_tool_as_user(
    upstream: Upstream,
    identity: str,
    name: str,
    arguments: dict[str, Any] | None,
    *,
    capabilities: dict[str, Any] | None,
    modern: bool,
    progress: ProgressFnT | None = None,
    timeout: float | None = None,
    meta: dict[str, Any] | None = None,
    round_: CallRound | None = None,
    answer_input: InputAnswerer | None = None,
    subject_token: str | None = None,
) -> ToolOutcome:
    """tools/call over this user's own session; without their login, the error that leads to it."""

    async def send(session: Session) -> ToolOutcome:
        return await session.call_tool(
            name,
            arguments,
            meta=meta,
            timeout=timeout or upstream.config.timeouts.call,
            progress=progress,
            capabilities=capabilities,
            round_=round_,
            answer_input=None if modern else answer_input,
        )

    return await as_user(upstream, identity, send, capabilities=capabilities, subject_token=subject_token)
