"""Endpoint URLs carry their token in the query: show them masked, and mask them wherever text may leak them."""

from __future__ import annotations

import logging
from urllib.parse import parse_qsl, urlencode, urlsplit

_SECRET_PARAMS = ("token", "key", "secret", "password", "auth", "jwt")


def mask_secret(value: str) -> str:
    """`***` plus the last 4 characters of a long secret (enough to tell two apart, useless to an attacker)."""
    return f"***{value[-4:]}" if len(value) >= 16 else "***"


def _is_secret(param: str) -> bool:
    lowered = param.lower()
    return any(word in lowered for word in _SECRET_PARAMS)


def secrets_of(url: str) -> list[str]:
    """The secret values in `url`: query parameters named like a token, and any password."""
    parts = urlsplit(url)
    found = [
        value for key, value in parse_qsl(parts.query, keep_blank_values=True) if _is_secret(key) and value
    ]
    if parts.password:
        found.append(parts.password)
    return found


def mask_url(url: str) -> str:
    """`wss://host/mcp/?token=***abcd`: safe to log and to show in status."""
    parts = urlsplit(url)
    query = urlencode(
        [
            (key, mask_secret(value) if _is_secret(key) and value else value)
            for key, value in parse_qsl(parts.query, keep_blank_values=True)
        ],
        safe="*",
    )
    netloc = parts.netloc
    if parts.password:
        netloc = netloc.replace(f":{parts.password}@", ":***@")
    return parts._replace(netloc=netloc, query=query).geturl()


def redact(text: str, secrets: list[str]) -> str:
    """`text` with every secret (raw or as it appears URL-encoded) replaced by its mask."""
    from urllib.parse import quote

    for secret in secrets:
        if secret:
            text = text.replace(secret, mask_secret(secret)).replace(
                quote(secret, safe=""), mask_secret(secret)
            )
    return text


class RedactingFilter(logging.Filter):
    """Masks secrets in every record of a logger (the websockets library logs request lines at debug)."""

    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        self.secrets = [s for s in secrets if s]

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = redact(message, self.secrets)
        if masked != message:
            record.msg, record.args = masked, None
        return True
