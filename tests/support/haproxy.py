"""A real HAProxy (Debian's) in front of gateway replicas, as docs/SCALING.md configures it.

Round robin over the replicas; a handshake-era MCP session sticks to the replica that created
it, keyed on the `Mcp-Session-Id` header (learned from the replica's initialize answer); a
2026-07-28 request carries no session id and goes to any replica.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from support.processes import free_port, running, wait_for_port


def haproxy_config(port: int, replicas: list[int]) -> str:
    servers = "\n".join(f"    server r{i} 127.0.0.1:{p} check inter 1s" for i, p in enumerate(replicas, 1))
    return f"""\
global
    maxconn 4096

defaults
    mode http
    timeout connect 2s
    timeout client 5m
    timeout server 5m
    timeout http-keep-alive 10s

frontend mcp
    bind 127.0.0.1:{port}
    default_backend replicas

backend replicas
    balance roundrobin
    # /healthz is open without the token; the Host must be one the replicas accept
    option httpchk
    http-check send meth GET uri /healthz ver HTTP/1.1 hdr Host 127.0.0.1
    # handshake-era sessions live in one replica: stick to it by the session id it handed out
    stick-table type string len 128 size 100k expire 30m
    stick match req.hdr(mcp-session-id)
    stick store-response res.hdr(mcp-session-id)
{servers}
"""


def haproxy_binary() -> str:
    found = shutil.which("haproxy") or "/usr/sbin/haproxy"
    if not Path(found).exists():
        raise AssertionError("haproxy is missing: run scripts/setup.sh (Debian package haproxy)")
    return found


@contextmanager
def haproxy(folder: Path, replicas: list[int]) -> Iterator[str]:
    """Yields the balancer's base URL (http://127.0.0.1:<port>)."""
    port = free_port()
    config = folder / "haproxy.cfg"
    config.write_text(haproxy_config(port, replicas))
    with running([haproxy_binary(), "-db", "-f", str(config)], log=folder / "haproxy.log") as proc:
        wait_for_port(port, timeout=15, proc=proc)
        yield f"http://127.0.0.1:{port}"
