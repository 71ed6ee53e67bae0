"""A client of a running gateway's admin API, for the CLI: one request, one clear error."""

from __future__ import annotations

import os
from typing import Any

import httpx2

DEFAULT_URL = "http://127.0.0.1:8787"


def default_url() -> str:
    """`$NEXUS_URL`, else the gateway's default address."""
    return os.environ.get("NEXUS_URL") or DEFAULT_URL


class AdminError(Exception):
    """The gateway could not be reached, refused us, or answered an error; the message says which."""

    def __init__(self, message: str, *, status: int | None = None, body: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class AdminClient:
    def __init__(self, url: str, token: str | None, *, timeout: float = 120) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        try:
            response = httpx2.request(
                method, self.url + path, json=body, headers=headers, timeout=self.timeout
            )
        except httpx2.HTTPError as exc:
            raise AdminError(
                f"no gateway answers at {self.url} ({type(exc).__name__}); start one with `nexus serve`, "
                "or pass --url (or set NEXUS_URL), or use --config FILE for a private gateway"
            ) from exc
        if response.status_code in (401, 403):
            raise AdminError(
                "the gateway wants a token: pass --token or set NEXUS_TOKEN", status=response.status_code
            )
        try:
            answer = response.json()
        except ValueError:
            answer = {"error": response.text[:500]}
        if response.status_code != 200:
            message = answer.get("error", answer) if isinstance(answer, dict) else answer
            raise AdminError(
                f"error {response.status_code}: {message}", status=response.status_code, body=answer
            )
        return answer

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        return self.request("POST", path, body)
