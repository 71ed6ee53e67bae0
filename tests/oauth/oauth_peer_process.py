"""The OAuth-protected test server (oauth_peer.py) as a process, and what tests ask it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2

from support.processes import child_env, stop_process, wait_for_http

PEER = Path(__file__).with_name("oauth_peer.py")


@dataclass
class OAuthPeer:
    base: str

    @property
    def mcp_url(self) -> str:
        return f"{self.base}/mcp"

    def stats(self) -> dict[str, int]:
        return dict(httpx2.get(f"{self.base}/test/stats", timeout=5).json())

    def issued(self) -> list[str]:
        return list(httpx2.get(f"{self.base}/test/issued", timeout=5).json())

    def presented(self) -> list[str]:
        return list(httpx2.get(f"{self.base}/test/presented", timeout=5).json())

    def next_subject(self, subject: str) -> None:
        """Who the person saying yes at the next authorization is."""
        httpx2.post(f"{self.base}/test/subject", json={"subject": subject}, timeout=5).raise_for_status()

    def expire(self) -> None:
        httpx2.post(f"{self.base}/test/expire", timeout=5).raise_for_status()

    def revoke(self) -> None:
        httpx2.post(f"{self.base}/test/revoke", timeout=5).raise_for_status()


@contextmanager
def oauth_peer(log: Path, *, token_ttl: int = 3600, refresh_delay: float = 0.0) -> Iterator[OAuthPeer]:
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, str(PEER), "--token-ttl", str(token_ttl), "--refresh-delay", str(refresh_delay)],
            stdout=subprocess.PIPE,
            stderr=err,
            env=child_env(),
            start_new_session=True,
        )
        try:
            assert proc.stdout is not None
            first = proc.stdout.readline().decode()
            if not first.startswith("PORT "):
                raise AssertionError(f"the OAuth peer did not start: {first!r}\n{log.read_text()[-2000:]}")
            peer = OAuthPeer(f"http://127.0.0.1:{int(first.split()[1])}")
            # The port is bound before uvicorn listens on it: wait until it answers.
            wait_for_http(f"{peer.base}/test/stats", timeout=15, proc=proc)
            yield peer
        finally:
            stop_process(proc)
