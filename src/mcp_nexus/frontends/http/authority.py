"""Strict parsing of the `Host` and `Origin` headers, for the HTTP guard (security.py).

Why parse instead of pattern-match: prefixes, suffixes and splitting on ':' let values such as
`[::1]evil.com`, `localhost.evil.com` or `http://127.0.0.1:1@evil.com` pass for loopback. Here a
value is accepted only if it is, as a whole, one of the shapes RFC 9110 / RFC 6454 allow:

    Host:   host [":" port]
    Origin: scheme "://" host [":" port]        (no userinfo, path, query or fragment)

where host is a DNS name (ASCII labels, no trailing dot), a dotted-quad IPv4 address in its one
canonical spelling, or a bracketed IPv6 address without a zone; port is 1 to 5 ASCII digits, at
most 65535. Names are compared case-insensitively. Anything else is malformed, and the guard
refuses it rather than guessing what a client meant.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_PORT = re.compile(r"[0-9]{1,5}")
_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")
_NUMERIC_LABEL = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)")


class MalformedAuthorityError(ValueError):
    """A Host or Origin value that is not one well-formed host[:port]."""


@dataclass(frozen=True)
class Authority:
    """A parsed host[:port]: `host` is lower-case, an IPv6 address keeps no brackets."""

    host: str
    port: int | None = None
    address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = None

    @property
    def is_loopback(self) -> bool:
        """`localhost` itself (not its subdomains), 127.0.0.0/8, ::1 or ::ffff:127.x.y.z."""
        if self.address is None:
            return self.host == "localhost"
        if isinstance(self.address, ipaddress.IPv6Address) and self.address.ipv4_mapped is not None:
            return self.address.ipv4_mapped.is_loopback
        return self.address.is_loopback


@dataclass(frozen=True)
class Origin:
    scheme: str
    authority: Authority


def _port(text: str) -> int:
    if not _PORT.fullmatch(text) or int(text) > 65535:
        raise MalformedAuthorityError(f"port {text!r} is not a number from 0 to 65535")
    return int(text)


def _host(text: str) -> tuple[str, ipaddress.IPv4Address | ipaddress.IPv6Address | None]:
    """The host part without port; brackets only around an IPv6 address."""
    if text.startswith("["):
        if not text.endswith("]"):
            raise MalformedAuthorityError("an IPv6 address must be enclosed in [ ]")
        inner = text[1:-1]
        if "%" in inner:
            raise MalformedAuthorityError("an IPv6 zone id is not allowed in a Host or Origin")
        try:
            v6 = ipaddress.IPv6Address(inner)
        except ValueError as exc:
            raise MalformedAuthorityError(f"{inner!r} is not an IPv6 address") from exc
        return str(v6), v6
    name = text.lower()
    if not name or len(name) > 253:
        raise MalformedAuthorityError("the host name is empty or longer than 253 characters")
    labels = name.split(".")
    if not all(_LABEL.fullmatch(label) for label in labels):
        raise MalformedAuthorityError(
            f"{text!r} is not a host name (ASCII letters, digits, '-' and '_' in dot-separated "
            "labels, no empty label or trailing dot)"
        )
    if _NUMERIC_LABEL.fullmatch(labels[-1]):
        # A name ending in a number is an IPv4 address to a browser (WHATWG URL), which would
        # also accept `127.1` or `0x7f.1`: only the canonical dotted quad is unambiguous.
        try:
            v4 = ipaddress.IPv4Address(name)
        except ValueError as exc:
            raise MalformedAuthorityError(f"{text!r} is not a dotted-quad IPv4 address") from exc
        return str(v4), v4
    return name, None


def parse_authority(text: str) -> Authority:
    """`host[:port]` as sent in a Host header (RFC 9110 section 7.2)."""
    if not text.isascii() or not text.isprintable() or " " in text:
        raise MalformedAuthorityError("only printable ASCII without spaces is allowed")
    if text.startswith("["):
        close = text.find("]")
        host_text, rest = (text, "") if close < 0 else (text[: close + 1], text[close + 1 :])
        if rest and not rest.startswith(":"):
            raise MalformedAuthorityError(f"unexpected {rest!r} after the IPv6 address")
        port_text = rest[1:] if rest else None
    elif ":" in text:
        host_text, port_text = text.rsplit(":", 1)
        if ":" in host_text:
            raise MalformedAuthorityError("an IPv6 address must be enclosed in [ ]")
    else:
        host_text, port_text = text, None
    host, address = _host(host_text)
    return Authority(host, None if port_text is None else _port(port_text), address)


def parse_origin(text: str) -> Origin:
    """`scheme://host[:port]` as serialised by browsers (RFC 6454 section 6.2).

    The opaque origin `null` and anything with userinfo, a path (even a lone `/`), a query or
    a fragment is malformed: browsers never send them, so a value that has one is forged.
    """
    scheme, separator, rest = text.partition("://")
    if not separator or not _SCHEME.fullmatch(scheme.lower()):
        raise MalformedAuthorityError("an Origin must look like scheme://host[:port]")
    if any(mark in rest for mark in "/?#@\\"):
        raise MalformedAuthorityError(
            "an Origin is only scheme://host[:port]: no userinfo, path, query or fragment"
        )
    return Origin(scheme.lower(), parse_authority(rest))
