"""Issue item 9: the dashboard cookie was not revocable, login guesses were not throttled, any token went.

Now each login gets its own random cookie value, revoked at `POST /logout`; failed logins are
limited per address (gateway.login_failures_per_minute, then 429 with Retry-After); and
`nexus serve` refuses a token shorter than 16 characters off loopback (a loopback bind warns).
Each test runs a real `nexus serve`.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from robustness.gateways import HttpGateway, write_config
from robustness.hostile_http import serve
from support.processes import VENV_BIN, child_env

TOKEN = "login-attack-token-0123456789"
COOKIE = "nexus_session"


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpGateway]:
    with serve(tmp_path_factory.mktemp("login"), token=TOKEN, login_failures_per_minute=10) as gateway:
        yield gateway


def login(base: str, token: str, address: str = "127.0.0.1") -> httpx2.Response:
    with httpx2.Client(transport=httpx2.HTTPTransport(local_address=address)) as client:
        return client.post(f"{base}/login", data={"token": token}, timeout=10)


def with_cookie(base: str, path: str, value: str, method: str = "GET") -> httpx2.Response:
    return httpx2.request(method, f"{base}{path}", headers={"Cookie": f"{COOKIE}={value}"}, timeout=10)


@pytest.mark.timeout(30)
def test_logout_revokes_that_cookie_and_a_new_login_gets_a_fresh_one(guarded: HttpGateway) -> None:
    first = login(guarded.base, TOKEN).cookies[COOKIE]
    second = login(guarded.base, TOKEN).cookies[COOKIE]
    assert first != second  # one value per login, not per token
    assert with_cookie(guarded.base, "/api/dashboard", first).status_code == 200
    assert with_cookie(guarded.base, "/logout", first, "POST").status_code == 303
    assert with_cookie(guarded.base, "/api/dashboard", first).status_code == 401
    page = with_cookie(guarded.base, "/", first)
    assert page.status_code == 303 and page.headers["location"] == "/login"
    assert with_cookie(guarded.base, "/api/dashboard", second).status_code == 200  # another login lives on
    third = login(guarded.base, TOKEN).cookies[COOKIE]
    assert third not in (first, second)
    assert with_cookie(guarded.base, "/api/dashboard", third).status_code == 200


@pytest.mark.timeout(30)
def test_failed_logins_are_throttled_per_address(guarded: HttpGateway) -> None:
    address = "127.0.0.3"  # its own address: the other tests' logins are not counted
    statuses = [login(guarded.base, f"guess-{n}", address).status_code for n in range(10)]
    assert statuses == [401] * 10
    throttled = login(guarded.base, "guess-11", address)
    assert throttled.status_code == 429
    assert 1 <= int(throttled.headers["retry-after"]) <= 60
    assert login(guarded.base, TOKEN, address).status_code == 429  # not even checked
    assert login(guarded.base, TOKEN, "127.0.0.4").status_code == 303  # another address is not


def serve_with_token(tmp_path: Path, host: str, token: str) -> subprocess.CompletedProcess[str]:
    config = write_config(tmp_path)
    args = [str(VENV_BIN / "nexus"), "serve", "-c", str(config), "--host", host, "--port", "0"]
    return subprocess.run(
        [*args, "--token", token], capture_output=True, text=True, env=child_env(), timeout=25
    )


@pytest.mark.timeout(30)
def test_a_short_token_is_refused_off_loopback(tmp_path: Path) -> None:
    done = serve_with_token(tmp_path, "0.0.0.0", "x")
    assert done.returncode == 2, done.stderr
    assert "gateway.token" in done.stderr and "16" in done.stderr, done.stderr


@pytest.mark.timeout(30)
def test_a_short_token_on_loopback_is_warned_about(tmp_path: Path) -> None:
    with serve(tmp_path, token="x") as gateway:
        assert (
            httpx2.get(f"{gateway.base}/api/servers", headers={"Authorization": "Bearer x"}).status_code
            == 200
        )
        log = gateway.log_tail(40)
    assert "weak token" in log and "gateway.token" in log, log
