"""The SDK's "OAuth flow error" log records, kept only for failures the gateway does not report itself.

The SDK's OAuth provider logs every failed flow with its traceback at ERROR, then raises the error
again. The gateway reports the failures it knows in one line each: a refused token request or
registration, a login that is needed or did not complete. They become the server's state and
reason (ERROR or NEEDS_AUTH, the reason naming the settings or the command to run), or the
answer to the login. A server with a wrong secret would otherwise add about 15 lines of traceback
at every retry. Any other exception is unexpected here, so its record is kept, traceback and all.
"""

from __future__ import annotations

import logging

from mcp.client.auth.exceptions import OAuthFlowError

from mcp_nexus.upstream.oauth.errors import AuthorizationRequired, LoginFailed

SDK_LOGGER = "mcp.client.auth.oauth2"
_REPORTED = (OAuthFlowError, AuthorizationRequired, LoginFailed)


class ReportedFlowErrors(logging.Filter):
    """Drops the SDK's record of a flow failure that the gateway reports as a state or an answer."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, _REPORTED)


def quiet_reported_flow_errors() -> None:
    """Install the filter on the SDK's OAuth logger, once per process."""
    sdk = logging.getLogger(SDK_LOGGER)
    if not any(isinstance(f, ReportedFlowErrors) for f in sdk.filters):
        sdk.addFilter(ReportedFlowErrors())
