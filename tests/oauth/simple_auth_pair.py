"""The MCP Python SDK's `simple-auth` example (vendored in simple_auth/) as two real processes.

Its authorization server (`mcp_simple_auth.auth_server`) registers clients, shows a login form
for a demo user and issues access tokens it keeps in memory; its resource server
(`mcp_simple_auth.server`) is an MCP server with one tool, `get_time`, that checks every bearer
token by introspection at the authorization server. Neither is Nexus code: they stand for a
real OAuth-protected upstream written by others.
"""

from __future__ import annotations

import html.parser
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin, urlparse

import httpx2

from support.processes import child_env, free_port, stop_process, wait_for_http

EXAMPLE_DIR = Path(__file__).with_name("simple_auth")
HOST = "127.0.0.1"


@dataclass
class SimpleAuthPair:
    """Both servers, the authorization server restartable on its port (it forgets every token)."""

    as_port: int
    rs_port: int
    log_dir: Path
    token_lifetime_s: int
    as_proc: subprocess.Popen[bytes] | None = None
    rs_proc: subprocess.Popen[bytes] | None = None
    as_logs: list[Path] = field(default_factory=list)

    @property
    def as_base(self) -> str:
        return f"http://{HOST}:{self.as_port}"

    @property
    def mcp_url(self) -> str:
        return f"http://{HOST}:{self.rs_port}/mcp"

    def as_log(self) -> str:
        """Everything every run of the authorization server wrote (uvicorn's access log included)."""
        return "".join(path.read_text(errors="replace") for path in self.as_logs if path.exists())

    def token_requests(self) -> int:
        """Token endpoint calls so far: each is a code exchange (this example issues no refresh tokens)."""
        return self.as_log().count('"POST /token HTTP')

    def start_authorization_server(self, *, wait: bool = True) -> None:
        log = self.log_dir / f"simple-auth-as-{len(self.as_logs)}.log"
        self.as_logs.append(log)
        env = child_env(MCP_TOKEN_LIFETIME_SECONDS=str(self.token_lifetime_s))
        args = [
            sys.executable,
            "-m",
            "mcp_simple_auth.auth_server",
            "--host",
            HOST,
            "--port",
            str(self.as_port),
        ]
        self.as_proc = _start(args, env, log)
        if wait:
            self.wait_authorization_server()

    def wait_authorization_server(self) -> None:
        wait_for_http(f"{self.as_base}/.well-known/oauth-authorization-server", timeout=30, proc=self.as_proc)

    def wait_ready(self) -> None:
        """Both answer (the resource server its protected-resource metadata)."""
        self.wait_authorization_server()
        metadata = f"http://{HOST}:{self.rs_port}/.well-known/oauth-protected-resource/mcp"
        wait_for_http(metadata, timeout=30, proc=self.rs_proc)

    def stop_authorization_server(self) -> None:
        if self.as_proc is not None:
            stop_process(self.as_proc)
            self.as_proc = None

    def restart_authorization_server(self) -> None:
        """Start it again on its port: every token it issued, and every client it registered, is
        gone (it keeps them in memory), which is what a revocation does to this login."""
        self.stop_authorization_server()
        self.start_authorization_server()


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(
            args, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=EXAMPLE_DIR
        )


@contextmanager
def simple_auth_pair(
    log_dir: Path, *, token_lifetime_s: int = 3600, wait: bool = True
) -> Iterator[SimpleAuthPair]:
    """Both servers on free ports; with `wait=False` the caller starts something else (a gateway)
    while they start, then calls `wait_ready()`."""
    pair = SimpleAuthPair(free_port(), free_port(), log_dir, token_lifetime_s)
    try:
        # Both start at once (each takes a second or two importing the SDK).
        pair.start_authorization_server(wait=False)
        args = [
            *(sys.executable, "-m", "mcp_simple_auth.server", "--host", HOST, "--port", str(pair.rs_port)),
            *("--auth-server", pair.as_base, "--transport", "streamable-http"),
        ]
        pair.rs_proc = _start(args, child_env(), log_dir / "simple-auth-rs.log")
        if wait:
            pair.wait_ready()
        yield pair
    finally:
        if pair.rs_proc is not None:
            stop_process(pair.rs_proc)
        pair.stop_authorization_server()


class _FormReader(html.parser.HTMLParser):
    """The login page's form: its action and its inputs' names and values."""

    def __init__(self) -> None:
        super().__init__()
        self.action: str | None = None
        self.fields: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "form" and self.action is None:
            self.action = values.get("action") or ""
        elif tag == "input" and values.get("name"):
            self.fields[str(values["name"])] = values.get("value") or ""


def browser_login(authorization_url: str) -> str:
    """What a person's browser does: open the authorization URL, follow redirects to the login
    page, submit its form as filled in (the demo user), and return where the server redirects
    (the gateway's callback with the code)."""
    with httpx2.Client(timeout=15, follow_redirects=False) as browser:
        answer = browser.get(authorization_url)
        while answer.status_code in (302, 303, 307) and "/login" not in answer.headers["location"]:
            answer = browser.get(urljoin(str(answer.url), answer.headers["location"]))
        assert answer.status_code in (302, 303, 307), f"{answer.status_code}: {answer.text[:500]}"
        page = browser.get(urljoin(str(answer.url), answer.headers["location"]))
        assert page.status_code == 200, page.text[:500]
        form = _FormReader()
        form.feed(page.text)
        assert form.action and {"username", "password", "state"} <= set(form.fields), page.text[:500]
        sent = browser.post(urljoin(str(page.url), form.action), data=form.fields)
        assert sent.status_code in (302, 303), f"{sent.status_code}: {sent.text[:500]}"
        callback = sent.headers["location"]
        assert urlparse(callback).path == "/oauth/callback", callback
        return callback
