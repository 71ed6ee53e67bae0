"""The issuer's published metadata (RFC 8414, or OpenID Connect discovery): where its keys are."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any
from urllib.parse import urlsplit

import httpx2

from mcp_nexus.identity.token_errors import IssuerUnavailable


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be, in the order RFC 8414 §3.1 and OIDC Discovery give."""
    parts = urlsplit(issuer)
    base = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    return [
        f"{base}/.well-known/oauth-authorization-server{path}",
        f"{base}/.well-known/openid-configuration{path}",
        f"{issuer.rstrip('/')}/.well-known/openid-configuration",
    ]


async def fetch_json(client: httpx2.AsyncClient, url: str) -> dict[str, Any]:
    """GET a JSON object, or IssuerUnavailable naming the URL and what went wrong."""
    return await json_answer(client.get(url, headers={"accept": "application/json"}), url)


async def json_answer(request: Awaitable[httpx2.Response], url: str) -> dict[str, Any]:
    """The JSON object a request to the issuer answers, or IssuerUnavailable saying what went wrong."""
    try:
        response = await request
    except httpx2.HTTPError as exc:
        raise IssuerUnavailable(f"{url}: {type(exc).__name__}: {exc}") from exc
    if response.status_code != 200:
        raise IssuerUnavailable(f"{url} answered HTTP {response.status_code}")
    try:
        body = response.json()
    except ValueError as exc:
        raise IssuerUnavailable(f"{url} did not answer JSON") from exc
    if not isinstance(body, dict):
        raise IssuerUnavailable(f"{url} did not answer a JSON object")
    return body


async def discover(client: httpx2.AsyncClient, issuer: str) -> dict[str, Any]:
    """The issuer's metadata; its `issuer` must be the configured one (RFC 8414 §3.3)."""
    problems = []
    for url in dict.fromkeys(metadata_urls(issuer)):
        try:
            metadata = await fetch_json(client, url)
        except IssuerUnavailable as exc:
            problems.append(exc.description)
            continue
        if metadata.get("issuer") != issuer:
            raise IssuerUnavailable(
                f"{url} names issuer {metadata.get('issuer')!r}, not the configured {issuer!r}"
            )
        return metadata
    raise IssuerUnavailable("no issuer metadata found (" + "; ".join(problems) + ")")
