"""A real `nexus serve` with real stdio upstreams (one of them crash-looping) and Debian's chromium.

Playwright drives the system browser (/usr/bin/chromium, installed by scripts/setup.sh);
it never downloads one. Each module shares one gateway with a token, one without, and one
browser, so the whole suite stays within a few tens of seconds.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from lifecycle.faults import document, faulty
from support.fake_xiaozhi import FakeXiaozhiEndpoint
from support.processes import ROOT, require
from support.served_gateway import ServedGateway, gateway_env, served

TOKEN = "dash-Tok3n-9f2c7e1b4a"
XIAOZHI_TOKEN = "xz-endpoint-t0ken-77aa31"  # in the endpoint URL's query: must be masked everywhere
CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS_ENV = "NEXUS_DASHBOARD_SCREENSHOTS"  # e.g. docs/img: where to keep the pages' pictures


class ThreadedXiaozhi:
    """The fake Xiaozhi endpoint (tests/support/fake_xiaozhi.py) on an event loop of its own thread,
    so the synchronous browser tests can point a gateway at it."""

    def __init__(self) -> None:
        self.url = ""
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with FakeXiaozhiEndpoint(tokens={XIAOZHI_TOKEN}) as fake:
            self.url = fake.url(XIAOZHI_TOKEN)
            self._ready.set()
            await self._stop.wait()

    def __enter__(self) -> ThreadedXiaozhi:
        self._thread.start()
        assert self._ready.wait(10), "the fake Xiaozhi endpoint did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(15)


# The control plane with its rule router (no LLM) over the Home-Assistant-like test server.
CONTROL = {
    "enabled": True,
    "environment": {
        "devices": [
            {"entity_id": "light.living_room", "name": "Living Room Light", "area": "客厅", "state": "off"}
        ]
    },
}
HOME = {"transport": "embedded", "module": "support.home_server:create_server", "options": {"devices": 4}}


def gateway_document(
    tmp: Path, *, token: str | None, xiaozhi: str | None = None, control: bool = False
) -> dict[str, Any]:
    crash_loop = faulty(
        "loop",
        "--crash-after",
        "0.3",
        restart={"backoff_min": 0.1, "backoff_max": 0.2, "max_attempts": 0, "reset_after": 1000},
    )
    doc = document(
        {
            "f": faulty("f", tool_config={"pid": {"cache_ttl": 60}}),
            "loop": crash_loop,
        },
        offload_threshold=2000,
        offload_dir=str(tmp / "offload"),
    )
    if token is not None:
        doc["gateway"]["token"] = token
    if xiaozhi is not None:
        doc["xiaozhi"] = {"endpoints": [xiaozhi]}
    if control:
        doc["servers"]["home"] = HOME
        doc["control"] = CONTROL
    return doc


def _serve(
    tmp: Path, token: str | None, xiaozhi: str | None = None, control: bool = False
) -> Iterator[ServedGateway]:
    config = tmp / "nexus.json"
    config.write_text(json.dumps(gateway_document(tmp, token=token, xiaozhi=xiaozhi, control=control)))
    with served(config, tmp, token=token, env=gateway_env(tmp)) as gateway:
        gateway.wait_state("f", "READY")
        yield gateway


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedGateway]:
    """A gateway with a token (the dashboard asks for it) and a Xiaozhi endpoint link."""
    with ThreadedXiaozhi() as endpoint:
        yield from _serve(tmp_path_factory.mktemp("dash-token"), TOKEN, endpoint.url)


@pytest.fixture(scope="module")
def open_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedGateway]:
    """A loopback gateway without a token (the dashboard opens directly, as the admin API does),
    with the control plane on."""
    yield from _serve(tmp_path_factory.mktemp("dash-open"), None, control=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    require(CHROMIUM)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield page
    finally:
        context.close()
    assert not errors, f"the page raised: {errors}"


def login(page: Page, gateway: ServedGateway) -> None:
    page.goto(gateway.base + "/login")
    page.fill("#token", TOKEN)
    page.click("button[type=submit]")
    page.wait_for_selector("#servers-table tbody tr")


def screenshot(page: Page, name: str, tmp: Path) -> Path:
    path = tmp / f"dashboard-{name}.png"
    page.screenshot(path=str(path), full_page=False)
    keep = os.environ.get(SCREENSHOTS_ENV)
    if keep:
        target = Path(keep) if Path(keep).is_absolute() else ROOT / keep
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target / path.name)
    return path
