"""Nexus as the client under test of the official suite's client mode (`conformance client --command`).

The harness runs its own MCP server (and authorization server) per scenario, appends that
server's URL to the command and sets MCP_CONFORMANCE_SCENARIO (MCP_CONFORMANCE_CONTEXT for
pre-registered clients and the extension grants). This driver starts `nexus serve` with that URL as its only upstream
(bare tool names, `auth: oauth`), logs the gateway in headlessly the way a browser would (opens
the authorization URL, follows the redirect to the gateway's /oauth/callback) unless the
scenario's grant needs no person (client credentials, enterprise-managed authorization: the
server must be READY without a login; `unattended_auth`), then makes the
scenario's calls through the gateway's admin API, which routes them like any MCP caller's. A
403 insufficient_scope puts the server back in NEEDS_AUTH: the driver logs in again (the step-up)
and repeats the call once.

    python tests/oauth/conformance_driver.py http://127.0.0.1:PORT/mcp
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2

# The harness runs this file as a script: the tests' shared helpers are one folder up.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support.served_port import serving_port

VENV_BIN = Path(__file__).resolve().parents[2] / ".venv" / "bin"
READY_STATES = ("READY", "DEGRADED")


def log(message: str) -> None:
    print(f"[nexus-driver] {message}", file=sys.stderr, flush=True)


def authorization_server(url: str) -> str:
    """The issuer the server's protected-resource metadata names (RFC 9728).

    An operator of a machine-to-machine or enterprise-managed client is told which authorization
    server its credentials belong to and writes it as `issuer`; the harness does not say it in its
    context, so the driver reads it where the server publishes it (as the SDK's own conformance
    client does)."""
    parts = urlsplit(url)
    document = f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path.rstrip('/')}"
    answer = httpx2.get(document, timeout=10)
    answer.raise_for_status()
    return str(answer.json()["authorization_servers"][0])


def secret_file(folder: Path, name: str, content: str) -> str:
    """A secret the operator keeps in a file readable by the gateway only (0600)."""
    path = folder / name
    path.touch(mode=0o600)
    path.write_text(content)
    return str(path)


def unattended_auth(url: str, scenario: str, context: dict[str, Any], folder: Path) -> dict[str, Any] | None:
    """The `auth` of a grant no person takes part in, from the scenario's context; None for a login.

    auth/client-credentials-basic: client_id + client_secret -> grant client_credentials,
      client_secret_basic; auth/client-credentials-jwt: client_id + private_key_pem (+ its
      signing_algorithm) -> private_key_jwt with the key in a 0600 file;
    auth/enterprise-managed-authorization: client_id + client_secret at the MCP authorization
      server, idp_client_id + idp_token_endpoint + idp_id_token -> grant identity_assertion with
      the ID token in a 0600 file (what an enterprise sign-in agent would keep fresh)."""
    if scenario.startswith("auth/client-credentials-"):
        auth: dict[str, Any] = {
            "grant": "client_credentials",
            "client_id": context["client_id"],
            "issuer": authorization_server(url),
        }
        if context.get("private_key_pem"):
            auth["token_endpoint_auth_method"] = "private_key_jwt"
            auth["private_key_file"] = secret_file(folder, "client-key.pem", context["private_key_pem"])
            auth["signing_algorithm"] = context.get("signing_algorithm", "RS256")
        else:
            auth["client_secret"] = context["client_secret"]
            auth["token_endpoint_auth_method"] = "client_secret_basic"
        return auth
    if context.get("idp_id_token"):
        return {
            "grant": "identity_assertion",
            "client_id": context["client_id"],
            "client_secret": context["client_secret"],
            "token_endpoint_auth_method": "client_secret_basic",
            "issuer": authorization_server(url),
            "identity_provider": {
                "token_endpoint": context["idp_token_endpoint"],
                "client_id": context["idp_client_id"],
                "id_token_file": secret_file(folder, "id-token", context["idp_id_token"]),
            },
        }
    return None


def upstream_config(url: str, folder: Path) -> dict[str, Any]:
    auth: dict[str, Any] = {}
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    unattended = unattended_auth(url, scenario, context, folder)
    if unattended is not None:
        auth = unattended
    elif context.get("client_id"):
        auth["client_id"] = context["client_id"]
        if context.get("client_secret"):
            auth["client_secret"] = context["client_secret"]
    if scenario.startswith("auth/") and unattended is None:
        # What the SDK's own conformance client offers: a Client ID Metadata Document URL.
        auth.setdefault("client_metadata_url", "https://conformance-test.local/client-metadata.json")
    server: dict[str, Any] = {
        "transport": "http",
        "url": url,
        "namespace": "",
        "auth": auth or "oauth",
        "restart": {"backoff_min": 0.2, "backoff_max": 1.0},
    }
    # No built-in servers: every scenario starts a gateway, and only the upstream under test matters.
    return {"gateway": {"include_builtins": False}, "servers": {"upstream": server}}


class Gateway:
    def __init__(self, base: str, process: subprocess.Popen[bytes]) -> None:
        self.base = base
        self.process = process
        self.http = httpx2.Client(timeout=60)

    def state(self) -> dict[str, Any]:
        # A gateway that exited ends the scenario at once, not after a wait for a state.
        if self.process.poll() is not None:
            raise SystemExit(f"the gateway exited with {self.process.returncode}")
        rows = self.http.get(f"{self.base}/api/servers").json()["servers"]
        return next(row for row in rows if row["name"] == "upstream")

    def wait(self, states: tuple[str, ...], timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                state = str(self.state()["state"])
            except (httpx2.HTTPError, StopIteration, KeyError):
                state = ""
            if state in states:
                return state
            time.sleep(0.1)
        raise SystemExit(f"the upstream is not {'/'.join(states)} after {timeout:g} s: {self.state()}")

    def login(self) -> None:
        started = self.http.post(f"{self.base}/api/auth/upstream/login").json()
        url = started.get("authorization_url")
        if not url:
            log(f"login: {started}")
            return
        log("login: following the authorization URL")
        answer = self.http.get(url, follow_redirects=False)
        location = answer.headers.get("location")
        if answer.status_code not in (301, 302, 303, 307, 308) or not location:
            raise SystemExit(f"the authorization server answered {answer.status_code} without a redirect")
        back = self.http.get(location)  # the browser arrives at the gateway's /oauth/callback
        log(f"callback: {back.status_code}")
        if back.status_code >= 400:
            # The gateway refused the login (a wrong iss, a grant the server does not take): no
            # state will turn READY, and waiting for one only spends the harness's time.
            raise SystemExit(f"the gateway refused the login: {back.status_code} {back.text[:300]}")

    def ready(self, login_allowed: bool = True) -> None:
        state = self.wait(("READY", "DEGRADED", "NEEDS_AUTH", "ERROR"), 60)
        if state == "NEEDS_AUTH" and not login_allowed:
            # A grant without a person must get its token by itself.
            raise SystemExit(f"the upstream asks for a login: {self.state().get('last_error')}")
        if state == "NEEDS_AUTH":
            self.login()
            self.wait(READY_STATES, 30)
        elif state == "ERROR":
            raise SystemExit(f"the upstream failed: {self.state().get('last_error')}")

    def tools(self) -> list[str]:
        rows = self.http.get(f"{self.base}/api/tools").json()["tools"]
        return [row["name"] for row in rows if row.get("server") == "upstream"]  # not the gateway's own

    def call(self, tool: str, arguments: dict[str, Any]) -> httpx2.Response:
        answer = self.http.post(f"{self.base}/api/tools/{tool}/call", json={"arguments": arguments})
        if answer.status_code != 200 and self.state()["state"] == "NEEDS_AUTH":
            log(f"{tool}: the server asks for a new login (step-up): logging in again")
            self.login()
            self.wait(READY_STATES, 30)
            answer = self.http.post(f"{self.base}/api/tools/{tool}/call", json={"arguments": arguments})
        log(f"{tool}: {answer.status_code} {answer.text[:200]}")
        return answer


def run(url: str, scenario: str) -> None:
    with tempfile.TemporaryDirectory(prefix="nexus-conformance-") as folder:
        config = Path(folder) / "nexus.json"
        settings = upstream_config(url, Path(folder))
        config.write_text(json.dumps(settings))
        env = {k: v for k, v in os.environ.items() if not k.startswith("NEXUS_")}
        env["NEXUS_DATA_DIR"] = str(Path(folder) / "data")
        args = [str(VENV_BIN / "nexus"), "serve", "--config", str(config), "--port", "0", "--no-watch"]
        gateway_log = Path(folder) / "gateway.log"
        with open(gateway_log, "wb") as out:
            proc = subprocess.Popen(
                args, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        try:
            try:
                # On port 0 the gateway holds its port itself: no other scenario's can answer here.
                port = serving_port(gateway_log, proc)
            except RuntimeError as exc:
                raise SystemExit(str(exc)) from None
            gateway = Gateway(f"http://127.0.0.1:{port}", proc)
            auth = settings["servers"]["upstream"]["auth"]
            gateway.ready(login_allowed=auth == "oauth" or auth.get("grant") is None)
            tools = gateway.tools()
            log(f"tools: {tools}")
            if scenario in ("tools_call", "request-metadata"):
                gateway.call("add_numbers", {"a": 5, "b": 3})
            elif scenario == "sse-retry":
                gateway.call("test_reconnection", {})
            elif scenario.startswith("auth/") and tools:
                gateway.call(tools[0], {})
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            printed = gateway_log.read_text()
            report_leaks(printed)
            if os.environ.get("NEXUS_DRIVER_LOG"):
                sys.stderr.write(printed)


LEAK_MARK = "[nexus-driver] SECRET IN THE GATEWAY'S LOG"


def report_leaks(gateway_log: str) -> None:
    """Say (for tests/oauth/client_mode.py, which reads it in the run's stderr.txt) whether a
    secret the scenario handed over shows in the gateway's log: a client secret, the private
    key's body, the ID token."""
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    pem_lines = (context.get("private_key_pem") or "").splitlines()
    secrets = {
        "client_secret": context.get("client_secret"),
        "idp_id_token": context.get("idp_id_token"),
        # a whole base64 line of the key's body reads the same in a plain or a JSON-escaped log
        "private_key_pem": pem_lines[1] if len(pem_lines) > 2 else None,
    }
    for name, value in secrets.items():
        if value and value in gateway_log:
            print(f"{LEAK_MARK}: {name}", file=sys.stderr, flush=True)


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit(f"usage: {sys.argv[0]} SERVER_URL")
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    log(f"scenario {scenario!r} at {sys.argv[-1]}")
    run(sys.argv[-1], scenario)


if __name__ == "__main__":
    main()
