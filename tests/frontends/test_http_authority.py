"""Host and Origin parsing (http_authority.py): every trick that once passed for loopback fails."""

from __future__ import annotations

import pytest

from mcp_nexus.frontends.http.authority import MalformedAuthorityError, parse_authority, parse_origin

LOOPBACK_HOSTS = [
    "localhost",
    "LOCALHOST",
    "LocalHost:8787",
    "127.0.0.1",
    "127.0.0.1:1",
    "127.1.2.3:65535",
    "[::1]",
    "[::1]:8787",
    "[0:0:0:0:0:0:0:1]",
    "[::ffff:127.0.0.1]",  # IPv4-mapped IPv6 of a loopback address
    "[::FFFF:7f00:1]:80",
]
FOREIGN_HOSTS = [
    "evil.com",
    "localhost.evil.com",
    "127.0.0.1.evil.com",
    "evil.localhost",  # subdomains of localhost may resolve anywhere through a plain DNS resolver
    "localhost-evil.com",
    "0.0.0.0",
    "192.0.2.1:8787",
    "[::]",
    "[2001:db8::1]",
    "[::ffff:192.0.2.1]",
    "xn--lcalhost-yxf",  # punycode of a look-alike: just another name
]
MALFORMED_HOSTS = [
    "",
    "[::1]evil.com",
    "[::1]:evil",
    "[::1].evil.com",
    "[::1",
    "::1",  # IPv6 needs brackets
    "[127.0.0.1]",
    "[::1%lo]",
    "[fe80::1%25eth0]",
    "localhost.",  # trailing dot
    "127.0.0.1.",
    "localhost..",
    ".localhost",
    "local..host",
    "127.1",  # browsers would say 127.0.0.1: only the canonical spelling is accepted
    "0x7f.0.0.1",
    "2130706433",
    "127.0.0.01",
    "017700000001",
    "localhost:",
    "localhost:99999",
    "localhost:65536",
    "localhost:-1",
    "localhost:+80",
    "localhost:8_0",
    "localhost: 80",
    "localhost:80:80",
    "localhost:٨٠",  # Arabic-Indic digits
    "user@localhost",
    "localhost/path",
    "localhost?x",
    "localhost#x",
    "local host",
    "localhost\t",
    "localhost\x00",
    "lоcalhost",  # Cyrillic o
    "localhost\u200b",
    "ｌｏｃａｌｈｏｓｔ",  # fullwidth
    "-localhost",
    "a" * 64 + ".com",  # a label over 63 characters
]


@pytest.mark.parametrize("value", LOOPBACK_HOSTS)
def test_loopback_hosts_are_loopback(value: str) -> None:
    assert parse_authority(value).is_loopback


@pytest.mark.parametrize("value", FOREIGN_HOSTS)
def test_foreign_hosts_parse_but_are_not_loopback(value: str) -> None:
    assert not parse_authority(value).is_loopback


@pytest.mark.parametrize("value", MALFORMED_HOSTS)
def test_malformed_hosts_are_refused(value: str) -> None:
    with pytest.raises(MalformedAuthorityError):
        parse_authority(value)


def test_parsed_host_is_normalised() -> None:
    assert parse_authority("LOCALHOST:0080").host == "localhost"
    assert parse_authority("LOCALHOST:0080").port == 80
    assert parse_authority("[0:0:0:0:0:0:0:1]:1").host == "::1"


@pytest.mark.parametrize(
    "value", ["http://localhost:3000", "https://127.0.0.1", "HTTP://LOCALHOST:8080", "http://[::1]:5173"]
)
def test_loopback_origins_parse(value: str) -> None:
    origin = parse_origin(value)
    assert origin.scheme in ("http", "https") and origin.authority.is_loopback


@pytest.mark.parametrize(
    "value",
    [
        "null",  # opaque origin (sandboxed iframe, file:)
        "localhost",
        "//localhost",
        "http:/localhost",
        "http://",
        "http://[::1]evil.com",
        "http://127.0.0.1:1@evil.com",
        "http://localhost@evil.com",
        "http://evil.com#@localhost",
        "http://evil.com\\@localhost",
        "http://localhost:3000/",  # browsers never send a path, not even "/"
        "http://localhost/path",
        "http://localhost?x=1",
        "http://localhost:65536",
        "http://localhost.",
        "http://lоcalhost",
        "1http://localhost",
        "http://localhost:80:80",
    ],
)
def test_malformed_origins_are_refused(value: str) -> None:
    with pytest.raises(MalformedAuthorityError):
        parse_origin(value)


@pytest.mark.parametrize(
    "value", ["http://localhost.evil.com", "http://127.0.0.1.evil.com", "https://evil.com", "http://[::]"]
)
def test_foreign_origins_are_not_loopback(value: str) -> None:
    assert not parse_origin(value).authority.is_loopback
