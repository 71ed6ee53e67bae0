"""Who an admin API caller is, and its offloaded results served back to it; mounted from api.py.

    GET /api/offload/{file}   an offloaded result (tool_output_<hex>.json) as text, to its owner only

An offloaded file belongs to the callers that received its SYSTEM_ALERT (offload_folder.py).
For the admin API that caller is `Caller("api", client)`, where `client` says which login it is:

- a dashboard login (the `nexus_session` cookie, sent without an Authorization header) is
  `login-<first 16 hex of the cookie's SHA-256>`: each login owns what its "try it" offloaded,
  and the fingerprint names it in the call log without revealing the cookie;
- a bearer-token client, or any client of a gateway without a token, is `api:-` (one principal:
  whoever holds the token, or every local process when there is none);
- a user (a dashboard login through the identity provider, or an access token of gateway.auth)
  carries its principal (admin_roles.py): it owns its files as `user:<sub>` whichever of its
  logins made them, and per-user rules (profiles, limits, cache) apply to it as on `/mcp`.

Another caller asking for a file gets 404, the same answer as for a file that never existed or
has expired, so the answer does not tell whether someone else's file is there.
"""

from __future__ import annotations

import hashlib
from typing import Any

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Route

from mcp_nexus.frontends.admin.json_io import error_response
from mcp_nexus.frontends.http.admin_roles import SCOPE_KEY
from mcp_nexus.frontends.http.session_cookie import COOKIE_NAME
from mcp_nexus.gateway import Gateway
from mcp_nexus.identity.principal import principal_of, scope_user
from mcp_nexus.pipeline.call import Caller
from mcp_nexus.pipeline.offload_folder import OFFLOAD_NAME

API_FRONTEND = "api"
LOGIN_CLIENT_PREFIX = "login-"
# The file is a tool's output: shown as text, never run as a page of this origin.
_FILE_HEADERS = {
    "x-content-type-options": "nosniff",
    "content-security-policy": "sandbox; default-src 'none'",
    "cache-control": "no-store",
}


def api_caller(request: Request) -> Caller:
    """The caller an admin API request is (see the module doc), as the pipeline and offload see it."""
    identity = request.scope.get(SCOPE_KEY)
    principal = identity.principal if identity is not None else principal_of(scope_user(request))
    cookie = None if "authorization" in request.headers else request.cookies.get(COOKIE_NAME)
    if not cookie:
        return Caller(API_FRONTEND, principal=principal)
    fingerprint = hashlib.sha256(cookie.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return Caller(API_FRONTEND, client=LOGIN_CLIENT_PREFIX + fingerprint, principal=principal)


def offload_routes(gateway: Gateway) -> list[Route]:
    async def offloaded(request: Request) -> Response:
        name = request.path_params["file"]
        if not OFFLOAD_NAME.fullmatch(name):
            return error_response(
                400, f"{name!r} is not an offloaded file's name (tool_output_<32 hex>.json)"
            )
        offloader = gateway.governance.offloader
        missing = (
            f"no offloaded file {name!r} of this caller (it may have expired, or never been this caller's)"
        )
        if offloader is None:
            return error_response(404, missing + "; offload is off on this gateway")
        folder = offloader.folder
        if not folder.owned_by(name, api_caller(request).identity) or not folder.exists(name):
            return error_response(404, missing)
        return FileResponse(
            folder.path / name,
            media_type="text/plain; charset=utf-8",
            headers=_FILE_HEADERS,
            content_disposition_type="inline",
            filename=name,
        )

    return [Route("/api/offload/{file}", offloaded, methods=["GET"])]


def offload_openapi_paths(guarded: Any, json_response: Any, error: dict[str, Any]) -> dict[str, Any]:
    """The offload operation for the admin API's OpenAPI document (helpers passed in from api.py)."""
    return {
        "/api/offload/{file}": {
            "get": {
                "summary": "An offloaded result, to the caller that received its SYSTEM_ALERT only",
                "parameters": [
                    {
                        "name": "file",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string", "pattern": "^" + OFFLOAD_NAME.pattern + "$"},
                    }
                ],
                "responses": guarded(
                    {
                        "200": {
                            "description": "The file's text (the tool's output)",
                            "content": {"text/plain": {"schema": {"type": "string"}}},
                        },
                        "400": json_response(error, "Not an offloaded file's name"),
                        "404": json_response(error, "No such file of this caller (or offload is off)"),
                    }
                ),
            }
        }
    }
