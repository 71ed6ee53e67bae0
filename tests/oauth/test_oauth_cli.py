"""`nexus auth status|login|logout` against a served gateway in front of a real OAuth-protected server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx2

from oauth.oauth_peer_process import oauth_peer
from oauth.test_oauth_login_served import _config
from support.processes import VENV_BIN, child_env, stop_process
from support.served_gateway import served


def _nexus(base: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VENV_BIN / "nexus"), *args, "--url", base],
        capture_output=True,
        text=True,
        timeout=60,
        env=child_env(COLUMNS="200"),
    )


def test_status_login_and_logout_from_the_command_line(tmp_path: Path) -> None:
    with oauth_peer(tmp_path / "peer.log") as peer, served(_config(tmp_path, peer), tmp_path) as gateway:
        gateway.wait_state("locked", "NEEDS_AUTH")
        piped = _nexus(gateway.base, "auth", "status")
        assert piped.returncode == 0, piped.stderr
        header, row = piped.stdout.splitlines()[:2]
        assert header.split("\t")[:3] == ["server", "state", "login"], piped.stdout
        assert row.split("\t")[:3] == ["locked", "NEEDS_AUTH", "needed"], piped.stdout
        assert "nexus auth login locked" in row
        as_json = json.loads(_nexus(gateway.base, "auth", "status", "--json").stdout)
        assert [r["server"] for r in as_json["servers"]] == ["locked"]

        # `login` prints the URL and waits; the "browser" follows it back to the gateway.
        login = subprocess.Popen(
            [
                str(VENV_BIN / "nexus"),
                "auth",
                "login",
                "locked",
                "--no-browser",
                "--wait",
                "40",
                "--url",
                gateway.base,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(),
            start_new_session=True,
        )
        try:
            assert login.stdout is not None
            url = next(line.strip() for line in login.stdout if line.strip().startswith("http"))
            to_gateway = httpx2.get(url, follow_redirects=False, timeout=10).headers["location"]
            assert httpx2.get(to_gateway, timeout=60).status_code == 200
            rest, errors = login.communicate(timeout=45)
        finally:
            stop_process(login)  # type: ignore[arg-type]
        assert login.returncode == 0, errors
        assert "locked: logged in, READY" in rest
        assert gateway.servers()["locked"]["state"] == "READY"

        again = _nexus(gateway.base, "auth", "login", "locked", "--no-browser")
        assert again.returncode == 0 and "no new login needed" in again.stdout, again.stdout + again.stderr

        out = _nexus(gateway.base, "auth", "logout", "locked")
        assert out.returncode == 0 and "locked: logged out" in out.stdout, out.stderr
        gateway.wait_state("locked", "NEEDS_AUTH")
        unknown = _nexus(gateway.base, "auth", "login", "nosuch")
        assert unknown.returncode == 1 and "nosuch" in unknown.stderr
