"""Secrets in a config: mask them when shown, redact them from any text that may leak them.

- `mask_url` / `secrets_of`: endpoint URLs carry their token in the query.
- `SecretRedactor`: every secret a loaded config holds (header values, env values, `apiKey`,
  tokens, URL credentials, secret-looking arguments, values that came from `${VAR}`), and
  `redact(text)` that replaces each of them wherever it appears (docs/SECURITY.md, "Secrets").
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

if TYPE_CHECKING:
    from mcp_nexus.config.schema import NexusConfig, ServerConfig

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


# -- every secret of a config ------------------------------------------------------------------

MIN_SECRET_CHARS = 6
"""Shorter values are not treated as secrets by the redactor: replacing every `1`, `on` or `UTC`
in a log would destroy it, and nothing that short is a credential worth the name."""

# Words a header value starts with that are not themselves secret.
_AUTH_SCHEMES = {"bearer", "basic", "token", "digest", "negotiate", "apikey", "api-key"}

# Words that make a command-line flag's value a secret (`--api-key X`, `--token=X`), matched
# against the flag's words so `--path` or `--author` do not count.
_SECRET_FLAG_WORDS = {
    "token", "key", "apikey", "secret", "password", "passwd", "pwd", "pass", "auth",
    "credential", "credentials", "pat", "jwt", "cookie", "bearer",
}  # fmt: skip


def is_secret_flag(arg: str) -> bool:
    """`--api-key`, `--token`, `-p`-style short flags aside: a flag whose name has a secret word."""
    if not arg.startswith("-") or arg in ("-", "--"):
        return False
    words = re.split(r"[-_.]+", arg.lstrip("-").lower())
    return any(word in _SECRET_FLAG_WORDS for word in words)


# Env variables whose values are locations, not credentials: redacting every path from an
# upstream's stderr would make tracebacks unreadable. `nexus config check` shows them too (config/masking.py).
_PATH_LIKE_ENV = re.compile(
    r"^(PATH|PYTHONPATH|NODE_PATH|HOME|PWD|TMPDIR|LANG|LANGUAGE|TZ|SHELL|USER|LC_\w+|\w+_(DIR|PATH|HOME|FILE))$"
)


def url_credentials(url: str) -> list[str]:
    """What a URL carries that may be a credential: the userinfo (and its password) and every query value."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return []
    if not parts.scheme or not parts.netloc:
        return []
    found: list[str] = []
    if "@" in parts.netloc:
        # `user:password`, and the password alone; a userinfo without a password is a token
        # (`https://TOKEN@host`). A user name beside a password is not treated as a secret.
        userinfo = parts.netloc.rsplit("@", 1)[0]
        found += [userinfo, unquote(userinfo)]
        if ":" in userinfo:
            password = userinfo.split(":", 1)[1]
            found += [password, unquote(password)]
    found.extend(value for _key, value in parse_qsl(parts.query, keep_blank_values=True) if value)
    return found


def mask_url_credentials(url: str) -> str:
    """`https://***@host/path?sig=***`: the userinfo and every query value masked, the rest kept."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "***"
    if not parts.scheme or not parts.netloc:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    query = urlencode(
        [(key, "***" if value else value) for key, value in parse_qsl(parts.query, keep_blank_values=True)],
        safe="*",
    )
    return parts._replace(netloc=netloc, query=query).geturl()


def _header_parts(value: str) -> Iterator[str]:
    """A header value and the pieces of it a program may print alone (the token after `Bearer`, cookie values)."""
    yield value
    for piece in re.split(r"[\s;,]+", value):
        if not piece or piece.lower() in _AUTH_SCHEMES:
            continue
        yield piece
        if "=" in piece:
            yield piece.split("=", 1)[1]
        decoded = _basic_credentials(piece)
        if decoded:
            yield decoded
            yield decoded.split(":", 1)[1]


def _basic_credentials(piece: str) -> str | None:
    """`user:password` when `piece` is the base64 of one (an `Authorization: Basic` value)."""
    if len(piece) < 8 or len(piece) % 4:
        return None
    try:
        text = base64.b64decode(piece, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    return text if ":" in text and text.isprintable() else None


def _with_url_parts(value: str) -> Iterator[str]:
    yield value
    yield from url_credentials(value)


def _argument_secrets(args: list[str]) -> Iterator[str]:
    """Values of secret-named flags (`--api-key X`, `--token=X`) and URL credentials in arguments."""
    take_next = False
    for arg in args:
        if take_next:
            yield arg
            take_next = False
        if arg.startswith("-") and "=" in arg:
            flag, value = arg.split("=", 1)
            if is_secret_flag(flag):
                yield value
        elif is_secret_flag(arg):
            take_next = True
        yield from url_credentials(arg)


def server_secrets(server: ServerConfig) -> Iterator[str]:
    """Every value of one server's config that may be a secret (short ones included; the redactor drops them)."""
    for value in server.headers.values():
        yield from _header_parts(value)
    for key, value in server.env.items():
        if not _PATH_LIKE_ENV.match(key):
            yield from _with_url_parts(value)
    if server.api_key:
        yield server.api_key
    if server.auth is not None and server.auth.client_secret:
        yield server.auth.client_secret
    if server.url:
        yield from url_credentials(server.url)
    yield from _argument_secrets(server.args)
    yield from server.interpolated_values


def config_secrets(config: NexusConfig) -> Iterator[str]:
    """Every value of a whole config that may be a secret."""
    settings = config.gateway
    if settings.token:
        yield settings.token
    for server in config.servers.values():
        yield from server_secrets(server)
    xiaozhi = config.xiaozhi
    for url in xiaozhi.endpoints:
        yield from url_credentials(url)
    for token in (xiaozhi.envelope_server.token, xiaozhi.envelope_client.token):
        if token:
            yield token
    if xiaozhi.envelope_client.url:
        yield from url_credentials(xiaozhi.envelope_client.url)
    for url in config.stores.redis_urls():
        yield from url_credentials(url)
    if config.llm.api_key:
        yield config.llm.api_key
    yield from config.interpolated_values


class SecretRedactor:
    """Replaces every configured secret in a text by its mask (`***`, or `***` and the last 4 characters).

    Each secret is also found URL-encoded and JSON-escaped (how it appears in a logged URL or
    a JSON dump). Values under `MIN_SECRET_CHARS` characters are ignored (`ignored` counts them).
    """

    def __init__(self, secrets: Iterable[str]) -> None:
        unique = {s for s in secrets if isinstance(s, str) and s}
        self.ignored = sum(1 for s in unique if len(s.strip()) < MIN_SECRET_CHARS)
        kept = sorted((s for s in unique if len(s.strip()) >= MIN_SECRET_CHARS), key=len, reverse=True)
        self._masks: dict[str, str] = {}
        for secret in kept:
            mask = mask_secret(secret)
            for form in (secret, quote(secret, safe=""), json.dumps(secret, ensure_ascii=False)[1:-1]):
                self._masks.setdefault(form, mask)
        forms = sorted(self._masks, key=len, reverse=True)  # the longest first: a secret inside another
        self._pattern = re.compile("|".join(map(re.escape, forms))) if forms else None
        self._secrets = tuple(kept)
        self.count = len(kept)

    @classmethod
    def from_config(cls, config: NexusConfig) -> SecretRedactor:
        return cls(config_secrets(config))

    @classmethod
    def for_server(cls, server: ServerConfig) -> SecretRedactor:
        """The secrets of one server's entry (and of every `${VAR}` of its file)."""
        return cls(server_secrets(server))

    def __bool__(self) -> bool:
        return self._pattern is not None

    def redact(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(lambda match: self._masks[match.group(0)], text)

    def redact_data(self, value: Any) -> Any:
        """JSON-like `value` with every string (keys too) redacted; other values as they are."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {
                self.redact(k) if isinstance(k, str) else k: self.redact_data(v) for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self.redact_data(v) for v in value]
        return value

    def with_secrets(self, secrets: Iterable[str]) -> SecretRedactor:
        """A redactor for these secrets and every one this one already had."""
        return SecretRedactor([*self._secrets, *secrets])


# -- logs ----------------------------------------------------------------------------------------


class SecretLogFilter(logging.Filter):
    """Redacts every record a handler writes, whoever logged it: the message, a traceback and a stack.

    Attached to handlers, not loggers: a logger's filter sees only the records logged on that very
    logger, never those of its children that propagate up to the handler.
    """

    def __init__(self) -> None:
        super().__init__()
        self.redactors: list[SecretRedactor] = []
        self._formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        for redactor in list(self.redactors):
            self._redact(record, redactor)
        return True

    def _redact(self, record: logging.LogRecord, redactor: SecretRedactor) -> None:
        message = record.getMessage()
        masked = redactor.redact(message)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redactor.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redactor.redact(record.stack_info)


_LOG_FILTER = SecretLogFilter()


def install_log_redaction(redactor: SecretRedactor) -> Callable[[], None]:
    """Redact `redactor`'s secrets from every record the root logger's handlers (and the `mcp_nexus`
    logger's, if it has its own) write from now on; the returned function takes them out again."""
    if redactor:
        _LOG_FILTER.redactors.append(redactor)
    for logger in (logging.getLogger(), logging.getLogger("mcp_nexus")):
        for handler in logger.handlers:
            if _LOG_FILTER not in handler.filters:
                handler.addFilter(_LOG_FILTER)

    def remove() -> None:
        if redactor in _LOG_FILTER.redactors:
            _LOG_FILTER.redactors.remove(redactor)

    return remove
