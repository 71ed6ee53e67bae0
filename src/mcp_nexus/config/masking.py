"""What `nexus config check` masks: secrets only, told by the key that holds a value or by its shape.

By key: a string under a key whose words name a secret (`token`, `secret`, `password`,
`api_key`/`apiKey`, `authorization`, `cookie`, `credential`, `pat`, a trailing `key`: `X-API-Key`,
`AWS_SECRET_ACCESS_KEY`). A key ending in `env`, `file`, `path`, `dir` or `url` names where a
secret is, not the secret (`api_key_env: NEXUS_LLM_API_KEY`, `TOKEN_FILE=/run/secrets/t`); a
URL is masked by its own rule.

By shape, anywhere: provider token formats (`sk-...`, `ghp_...`, `github_pat_...`, `xoxb-...`,
`glpat-...`, `AKIA...`, `AIza...`, `hf_...`, JWTs `eyJ...`, PEM private keys) and long
high-entropy strings (`looks_like_secret`).

In URLs: the userinfo (`https://***@host`) and the query parameters whose name says secret
(`token`, `key`, `sig`, `signature`, `password`, `auth`, `code`, ...) or whose value has a
secret's shape; `?v=2` stays.

Plain values are shown: `LOG_LEVEL=debug`, `X-Trace: on`, `/srv/data`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from mcp_nexus.config.secrets import MIN_SECRET_CHARS, is_secret_flag

MASK = "***"

# Words of a key that make its string value a secret.
_SECRET_WORDS = frozenset(
    {
        "token", "secret", "password", "passwd", "pwd", "apikey", "authorization", "auth", "cookie",
        "credential", "credentials", "pat", "jwt", "bearer", "passphrase", "session", "sessionid",
    }
)  # fmt: skip
# A key ending in one of these names a place or a variable that holds the secret, not the secret.
_POINTER_WORDS = frozenset({"env", "var", "file", "path", "dir", "url", "uri", "endpoint", "name", "header"})
# Query parameters that carry a credential (besides any of _SECRET_WORDS).
_SECRET_PARAMS = frozenset({"key", "sig", "signature", "code", "access_token", "client_secret", "sas"})

# Provider token formats: masked wherever they appear.
_TOKEN_SHAPES = re.compile(
    r"""
    \bsk-[A-Za-z0-9_-]{16,}                       # OpenAI, Anthropic (sk-ant-...), DeepSeek
    | \b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}  # Stripe secret and restricted keys
    | \bgh[pousr]_[A-Za-z0-9]{20,}                # GitHub tokens
    | \bgithub_pat_[A-Za-z0-9_]{20,}              # GitHub fine-grained tokens
    | \bxox[abposr]-[A-Za-z0-9-]{10,}             # Slack
    | \bglpat-[A-Za-z0-9_-]{16,}                  # GitLab
    | \b(?:AKIA|ASIA)[0-9A-Z]{16}\b               # AWS access key ids
    | \bAIza[0-9A-Za-z_-]{30,}                    # Google API keys
    | \bhf_[A-Za-z0-9]{20,}                       # Hugging Face
    | \bpplx-[A-Za-z0-9]{20,}                     # Perplexity
    | \beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*)?  # a JWT: base64 of '{"'
    | -----BEGIN[A-Z ]*PRIVATE\ KEY-----
    """,
    re.VERBOSE,
)
# A token-like string: one word of base64/hex/url-safe characters.
_TOKEN_CHARS = re.compile(r"^[A-Za-z0-9+/=_\-.~]+$")
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.I)
_PATH = re.compile(r"^(?:~?/|\.{1,2}/|[A-Za-z]:[\\/])")
MIN_RANDOM_CHARS = 20
"""A random-looking string shorter than this is not masked by shape (`v1.2.3-rc4`, short ids)."""


def key_words(key: str) -> list[str]:
    """`X-API-Key` -> [x, api, key]; `apiKey` -> [api, key]; `AWS_SECRET_ACCESS_KEY` -> [aws, secret, access, key]."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", key)
    return [word for word in re.split(r"[\s\-_.:]+", spaced.lower()) if word]


def is_secret_key(key: str) -> bool:
    """A key whose (string) value is a secret; `api_key_env`, `TOKEN_FILE`, `max_tokens` are not."""
    words = key_words(key)
    if not words or words[-1] in _POINTER_WORDS:
        return False
    if any(word in _SECRET_WORDS for word in words):
        return True
    # `api_key`, `X-API-Key`, `PRIVATE_KEY`, `OPENAI_API_KEY`: a key whose last word is "key"
    # (`key_prefix`, `keys` and `keyword` are not).
    return words[-1] == "key" and len(words) > 1


def _entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def looks_like_secret(value: str) -> bool:
    """A provider token format anywhere in `value`, or `value` is one long random-looking word."""
    if _TOKEN_SHAPES.search(value):
        return True
    if len(value) < MIN_RANDOM_CHARS or not _TOKEN_CHARS.match(value) or _PATH.match(value):
        return False
    if not any(c.isdigit() for c in value) or not any(c.isalpha() for c in value):
        return False
    if re.fullmatch(r"[0-9a-fA-F-]+", value):
        return len(value.replace("-", "")) >= 32  # a hex key or a UUID-shaped one
    # Words and version numbers (`mcp-server-filesystem-2025.1.14`) repeat their letters;
    # a random token of 20+ characters from 60 symbols rarely stays under 4 bits per character.
    parts = re.split(r"[-_.~/]", value)
    if max(len(part) for part in parts) < 12:
        return False  # made of short pieces: names, dates, versions
    return _entropy(value) >= 4.0


def _secret_param(name: str, value: str) -> bool:
    lowered = name.lower()
    return (
        lowered in _SECRET_PARAMS
        or any(word in _SECRET_WORDS or word == "key" for word in key_words(name))
        or looks_like_secret(value)
    )


def mask_url(url: str) -> str:
    """`https://***@host/mcp?sig=***&v=2`: the userinfo and the secret-looking query values masked."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK
    if not parts.scheme or not parts.netloc:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = MASK + "@" + netloc.rsplit("@", 1)[1]
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    if any(value and _secret_param(name, value) for name, value in pairs):
        query = urlencode(
            [(name, MASK if value and _secret_param(name, value) else value) for name, value in pairs],
            safe="*",
        )
    else:
        query = parts.query  # nothing to hide: left exactly as written
    return parts._replace(netloc=netloc, query=query).geturl()


def mask_text(value: str) -> str:
    """A string shown under a key that says nothing: URLs and secret-shaped values masked."""
    if _URL.match(value):
        return mask_url(value)
    shown = _TOKEN_SHAPES.sub(MASK, value)  # `Bearer sk-...` -> `Bearer ***`
    if shown == value and looks_like_secret(value):
        return MASK
    return shown


class Masker:
    """Masks a JSON-like document for display: by key, by shape, and every value a `${VAR}` supplied.

    `from_variables` are what `${VAR}` substitution produced: people keep a value in the
    environment so that it is not in the file, so it is not shown either (unless it is a plain
    absolute path, `${HOME}/data`). Parts shorter than MIN_SECRET_CHARS are left alone.
    """

    def __init__(self, from_variables: frozenset[str] = frozenset(), *, reveal: bool = False) -> None:
        self.reveal = reveal  # `--show-secrets`: nothing masked
        parts = sorted(
            (v for v in from_variables if len(v) >= MIN_SECRET_CHARS and not _is_plain_path(v)),
            key=len,
            reverse=True,
        )
        self._variables = re.compile("|".join(map(re.escape, parts))) if parts else None

    def value(self, key: str, value: Any) -> Any:
        """One value as shown under `key` (a dict or list is walked)."""
        if self.reveal:
            return value
        if isinstance(value, dict):
            return {k: self.value(str(k), v) for k, v in value.items()}
        if isinstance(value, list):
            return self.arguments(value) if key == "args" else [self.value(key, v) for v in value]
        if not isinstance(value, str) or not value:
            return value
        if is_secret_key(key):
            return MASK
        shown = self._variables.sub(MASK, value) if self._variables is not None else value
        return mask_text(shown)

    def arguments(self, args: list[Any]) -> list[Any]:
        """Command-line arguments: the value after (or in) a secret-named flag, and secret shapes."""
        if self.reveal:
            return list(args)
        shown: list[Any] = []
        secret_next = False
        for arg in args:
            if not isinstance(arg, str):
                shown.append(arg)
                continue
            if secret_next:
                shown.append(MASK)
                secret_next = False
                continue
            if arg.startswith("-") and "=" in arg:
                flag, value = arg.split("=", 1)
                if is_secret_flag(flag):
                    shown.append(f"{flag}={MASK}")
                    continue
                shown.append(f"{flag}={self.value('', value)}")
                continue
            secret_next = is_secret_flag(arg)
            shown.append(self.value("", arg))
        return shown


def _is_plain_path(value: str) -> bool:
    return bool(_PATH.match(value)) and not looks_like_secret(value.rsplit("/", 1)[-1])
