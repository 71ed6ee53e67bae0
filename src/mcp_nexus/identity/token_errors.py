"""Why a bearer token was refused, in the words RFC 6750 §3.1 gives a client."""

from __future__ import annotations


class TokenRejected(Exception):
    """The token is missing, malformed, expired, not for us, or not signed by our issuer: 401 invalid_token."""

    error = "invalid_token"
    status = 401

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


class InsufficientScope(TokenRejected):
    """A valid token without a scope the request needs: 403 insufficient_scope."""

    error = "insufficient_scope"
    status = 403

    def __init__(self, missing: list[str], required: list[str]) -> None:
        super().__init__(f"the token lacks scope {' '.join(missing)}")
        self.missing, self.required = missing, required


class IssuerUnavailable(TokenRejected):
    """The issuer's keys or introspection could not be reached: 503, so a client retries rather
    than throwing a token away that may be valid."""

    error = "temporarily_unavailable"
    status = 503

    def __init__(self, description: str) -> None:
        super().__init__(f"cannot validate the token now: {description}")
