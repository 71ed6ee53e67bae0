"""Every place Nexus touches a private member of the MCP SDK, in one module.

Each seam has one test in tests/test_sdk_seams.py that fails loudly if an SDK release
renames or reshapes what it relies on (instead of behaviour changing silently behind a
`getattr(..., None)`). Nothing else in Nexus may use an SDK name that starts with `_`.

The seams, and why there is no public way:
1. `forward_client_capabilities`: 2026-07-28 requests carry the client's capabilities in
   `_meta`, stamped by `ClientSession._stamp` from the session-wide declaration. A relay
   must stamp the *downstream* caller's capabilities per request (SEP-2575), and the SDK
   has no per-call option for it, so we wrap `_stamp`.
2. `connection_of`: the handshake-era `Connection` behind a server request context
   (`ServerSession._connection`), to push list_changed on that client's standalone
   channel and to remember its resource subscriptions. The context exposes the session
   only.
4. `http_session_count`, `touch_http_session`: how many handshake-era HTTP sessions the SDK's
   session manager keeps (the idle-session metric), and whether one is open, restarting its
   idle countdown (the lean tools/call answers without the SDK's transport, which alone
   would restart it); the manager exposes neither. `http_session_ids`, `close_http_session`: which
   sessions are open, and closing one now (the session limits of frontends/mcp/http_sessions.py
   evict the oldest idle session and expire half-open ones); the manager can only refuse new
   sessions at its cap, never close one.
3. `caller_wants_progress`: whether a downstream request asked for progress. Public
   `ctx.meta.progress_token` answers on the JSON-RPC paths; the SDK's in-process path
   keeps a callback on `ServerSession._request_outbound` instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
from mcp import ClientSession
from mcp_types import CLIENT_CAPABILITIES_META_KEY

CAPABILITIES_OVERRIDE_KEY = "nexus/clientCapabilities"
"""Private `_meta` key a caller sets on a request; the wrapped stamp moves it into the envelope."""


class SdkSeamMissing(RuntimeError):
    """The installed MCP SDK no longer has a member Nexus relies on (see this module's docstring)."""


def forward_client_capabilities(session: ClientSession) -> None:
    """Seam 1: let a request's `_meta[CAPABILITIES_OVERRIDE_KEY]` replace the stamped client capabilities.

    Call it after the era is negotiated: `ClientSession.adopt()` installs a new stamp.
    """
    original: Callable[[dict[str, Any], Any], None] | None = getattr(session, "_stamp", None)
    if original is None or not callable(original):
        raise SdkSeamMissing("mcp.ClientSession._stamp is gone: per-caller capabilities cannot be forwarded")

    def stamp(data: dict[str, Any], opts: Any) -> None:
        meta = (data.get("params") or {}).get("_meta")
        override = meta.pop(CAPABILITIES_OVERRIDE_KEY, None) if isinstance(meta, dict) else None
        original(data, opts)
        stamped = (data.get("params") or {}).get("_meta")
        if override is not None and isinstance(stamped, dict) and CLIENT_CAPABILITIES_META_KEY in stamped:
            stamped[CLIENT_CAPABILITIES_META_KEY] = override

    session._stamp = stamp


def connection_of(server_session: Any) -> Any:
    """Seam 2: the `mcp.server.connection.Connection` behind a `ServerSession`."""
    try:
        return server_session._connection
    except AttributeError:
        raise SdkSeamMissing("mcp.server.session.ServerSession._connection is gone") from None


def caller_wants_progress(ctx: Any) -> bool:
    """Seam 3: whether the downstream request carries a progress token (or an in-process progress callback)."""
    meta = getattr(ctx, "meta", None)
    if meta is not None and getattr(meta, "progress_token", None) is not None:
        return True
    try:
        outbound = ctx.session._request_outbound
    except AttributeError:
        raise SdkSeamMissing("mcp.server.session.ServerSession._request_outbound is gone") from None
    if outbound is None or not (hasattr(outbound, "_progress_token") or hasattr(outbound, "_on_progress")):
        return True  # a shape we cannot read: asking the upstream for progress is the safe side
    return (
        getattr(outbound, "_progress_token", None) is not None
        or getattr(outbound, "_on_progress", None) is not None
    )


def http_session_count(session_manager: Any) -> int:
    """Seam 4: the number of open handshake-era sessions of a `StreamableHTTPSessionManager`."""
    try:
        return len(session_manager._server_instances)
    except AttributeError:
        raise SdkSeamMissing("StreamableHTTPSessionManager._server_instances is gone") from None


def touch_http_session(session_manager: Any, session_id: str) -> bool:
    """Seam 4: True when the session is open (and its idle countdown restarts now), else False."""
    try:
        transport = session_manager._server_instances.get(session_id)
    except AttributeError:
        raise SdkSeamMissing("StreamableHTTPSessionManager._server_instances is gone") from None
    if transport is None or getattr(transport, "is_terminated", False):
        return False
    idle_scope = getattr(transport, "idle_scope", None)
    if idle_scope is not None:
        if idle_scope.cancel_called:
            return False
        timeout = session_manager.session_idle_timeout
        if timeout is not None:
            idle_scope.deadline = anyio.current_time() + timeout
    return True


def http_session_owned_by(session_manager: Any, session_id: str, user: Any) -> bool:
    """Seam 4: the session was opened with the credential of the ASGI scope's `user` (the SDK's
    session binding, which the lean tools/call must keep too: another credential's use of a
    session is answered as an unknown session)."""
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context

    try:
        owner = session_manager._session_owners.get(session_id)
    except AttributeError:
        raise SdkSeamMissing("StreamableHTTPSessionManager._session_owners is gone") from None
    requestor = authorization_context(user) if isinstance(user, AuthenticatedUser) else None
    return bool(owner == requestor)


def http_session_ids(session_manager: Any) -> Any:
    """Seam 4: the ids of the open handshake-era sessions (a live view: copy it before awaiting)."""
    try:
        return session_manager._server_instances.keys()
    except AttributeError:
        raise SdkSeamMissing("StreamableHTTPSessionManager._server_instances is gone") from None


async def close_http_session(session_manager: Any, session_id: str) -> bool:
    """Seam 4: close one session now (its id answers 404 from this call on); False if it was not open."""
    try:
        transport = session_manager._server_instances.get(session_id)
        discard = session_manager._discard_session
    except AttributeError:
        raise SdkSeamMissing(
            "StreamableHTTPSessionManager._server_instances/_discard_session is gone"
        ) from None
    if transport is None:
        return False
    # Forgotten before any await (the id is refused at once), then its transport terminated;
    # cancelling the idle scope ends the session's server task as an idle timeout would.
    idle_scope = getattr(transport, "idle_scope", None)
    if idle_scope is not None:
        idle_scope.cancel()
    await discard(session_id, transport)
    return True
