"""MCP clients of both protocol eras over both frontends, speaking JSON-RPC by hand.

By hand, so the timing is the test's: `request` sends at once, with no client-side list cache,
discovery probe or schema check between the test and the gateway. Handshake era (2025-11-25):
`initialize` + `notifications/initialized`, then requests. 2026-07-28: no handshake; each request
carries the envelope in `params._meta` (and, over HTTP, the routing headers).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from pathlib import Path
from typing import Any, Protocol

import httpx2

from robustness.http_client import (
    ACCEPT,
    CLIENT_INFO,
    HANDSHAKE_VERSION,
    modern_headers,
    modern_meta,
    read_answer,
)
from support.processes import VENV_BIN

ERAS = ("2025-11-25", "2026-07-28")


class MatrixClient(Protocol):
    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The JSON-RPC answer (with `result` or `error`) to one request."""
        ...


def _params(era: str, params: dict[str, Any] | None) -> dict[str, Any]:
    if era == HANDSHAKE_VERSION:
        return dict(params or {})
    return {**(params or {}), "_meta": modern_meta()}


def _initialize() -> dict[str, Any]:
    return {"protocolVersion": HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO}


class StdioClient:
    """`nexus serve --stdio --config F` as a desktop client spawns it."""

    def __init__(self, config: Path, era: str, env: dict[str, str], log: Path) -> None:
        self.config, self.era, self.env, self.log = config, era, env, log
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.notifications: list[dict[str, Any]] = []
        self.proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    async def __aenter__(self) -> StdioClient:
        self._log = open(self.log, "wb")  # noqa: SIM115 - closed in __aexit__
        self.proc = await asyncio.create_subprocess_exec(
            str(VENV_BIN / "nexus"),
            "serve",
            "--stdio",
            "--no-watch",
            "--config",
            str(self.config),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=self._log,
            env=self.env,
            limit=16 * 1024 * 1024,
        )
        self._reader = asyncio.create_task(self._read())
        if self.era == HANDSHAKE_VERSION:
            answer = await self.request("initialize", _initialize())
            assert "result" in answer, answer
            await self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    async def __aexit__(self, *exc: object) -> None:
        proc = self.proc
        assert proc is not None and proc.stdin is not None
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 15)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise AssertionError(
                "nexus serve --stdio did not exit within 15 s of its stdin closing"
            ) from None
        finally:
            if self._reader is not None:
                self._reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._reader
            self._log.close()

    async def _send(self, message: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        await self.proc.stdin.drain()

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            message = json.loads(line)
            if "id" in message and message.get("method") is None:
                future = self._waiting.pop(message["id"], None)
                if future is not None and not future.done():
                    future.set_result(message)
            elif message.get("method"):
                self.notifications.append(message)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        request_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        params = params if method == "initialize" else _params(self.era, params)
        await self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return await asyncio.wait_for(future, 60)


class HttpClient:
    """A client of `/mcp` on a running `nexus serve`."""

    def __init__(self, url: str, era: str) -> None:
        self.url, self.era = url, era
        self._ids = itertools.count(1)
        self.session_id: str | None = None
        self.http = httpx2.AsyncClient(timeout=60)

    async def __aenter__(self) -> HttpClient:
        if self.era == HANDSHAKE_VERSION:
            body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": _initialize()}
            response = await self.http.post(self.url, json=body, headers=ACCEPT)
            assert response.status_code == 200, response.text
            self.session_id = response.headers["mcp-session-id"]
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await self.http.post(self.url, json=note, headers=self._headers(note))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()

    def _headers(self, message: dict[str, Any]) -> dict[str, str]:
        if self.era == HANDSHAKE_VERSION:
            assert self.session_id is not None
            return {**ACCEPT, "Mcp-Session-Id": self.session_id, "MCP-Protocol-Version": HANDSHAKE_VERSION}
        return modern_headers(message)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        message = {
            "jsonrpc": "2.0",
            "id": next(self._ids),
            "method": method,
            "params": _params(self.era, params),
        }
        response = await self.http.post(self.url, content=json.dumps(message), headers=self._headers(message))
        return read_answer(response).only_answer()
