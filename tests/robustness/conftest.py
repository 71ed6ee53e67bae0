"""Fixtures for the robustness suite: gateways that are restarted when a test kills them.

A malformed line that crashes the gateway must fail the test that sent it, and only that
one: each module shares one gateway process, and a test that finds it dead gets a fresh one.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from robustness.gateways import HttpGateway, write_config
from robustness.stdio_client import StdioGateway
from robustness.xiaozhi_links import ENDPOINT_TOKEN, ENVELOPE_TOKEN, FAST, Device, Stack
from support.fake_xiaozhi import FakeXiaozhiEndpoint
from support.processes import free_port


class StdioPool:
    """Hands out a live, initialized stdio gateway, starting a new one when the last one died."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.config = write_config(folder)
        self.current: StdioGateway | None = None
        self.started = 0

    def get(self) -> StdioGateway:
        if self.current is not None and self.current.alive and self._responsive(self.current):
            return self.current
        if self.current is not None:
            self.current.stop()
        self.started += 1
        self.current = StdioGateway(self.config, self.folder / f"stderr-{self.started}.log")
        self.current.handshake()
        return self.current

    @staticmethod
    def _responsive(gateway: StdioGateway) -> bool:
        """A gateway that a previous test left alive but deaf is replaced too (and not blamed twice)."""
        try:
            gateway.sentinel(timeout=3)
        except AssertionError:
            return False
        return True

    def close(self) -> None:
        if self.current is not None:
            self.current.stop()


class HttpPool:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.config = write_config(folder)
        self.current: HttpGateway | None = None
        self.started = 0

    def get(self) -> HttpGateway:
        if self.current is not None and self.current.alive:
            return self.current
        if self.current is not None:
            self.current.stop()
        self.started += 1
        self.current = HttpGateway(self.config, self.folder / f"gateway-{self.started}.log").wait_ready()
        return self.current

    def close(self) -> None:
        if self.current is not None:
            self.current.stop()


@pytest.fixture(scope="module")
def stdio_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioPool]:
    pool = StdioPool(tmp_path_factory.mktemp("stdio"))
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def stdio_gateway(stdio_pool: StdioPool) -> StdioGateway:
    return stdio_pool.get()


@pytest.fixture(scope="module")
def http_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpPool]:
    pool = HttpPool(tmp_path_factory.mktemp("http"))
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def http_gateway(http_pool: HttpPool) -> HttpGateway:
    return http_pool.get()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    """One `nexus serve` with both Xiaozhi links: dialing a fake endpoint, and an envelope server."""
    folder = tmp_path_factory.mktemp("xiaozhi")
    async with FakeXiaozhiEndpoint(tokens={ENDPOINT_TOKEN}) as fake:
        envelope_port = free_port()
        xiaozhi = {
            "endpoints": [fake.url(ENDPOINT_TOKEN)],
            **FAST,
            "envelope_server": {
                "enabled": True,
                "host": "127.0.0.1",
                "port": envelope_port,
                "token": ENVELOPE_TOKEN,
            },
        }
        gateway = HttpGateway(write_config(folder, xiaozhi=xiaozhi), folder / "gateway.log")
        try:
            await asyncio.to_thread(gateway.wait_ready)  # the fake endpoint must keep serving meanwhile
            yield Stack(fake, gateway, envelope_port)
        finally:
            await asyncio.to_thread(gateway.stop)


@pytest_asyncio.fixture(loop_scope="module")
async def device(stack: Stack) -> AsyncIterator[Device]:
    """A fresh envelope-server session for each test (a broken one fails only its own test)."""
    opened = await Device.open(stack.envelope_port)
    try:
        yield opened
    finally:
        await opened.close()
