"""Several `nexus serve` replicas behind HAProxy, sharing one redis-server and one backend: all real processes.

    with cluster(tmp_path, replicas=3) as c:
        c.call("backend.stamp", {"key": "k"})            # through the balancer (admin API, round robin)
        c.replicas[1].call("backend.stamp", {...})       # one replica directly
        c.redis.stop(); c.redis.start()                  # Redis away and back
        c.backend_counts()                               # calls that reached the backend

Every replica has the same config: the backend over HTTP (handshake era, so a list_changed
reaches only the session of the call that caused it), `stores.default` on the Redis, one
shared offload folder, a 60 s cache on the backend's read-only tools and 5/second on `tick`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from support.haproxy import haproxy
from support.processes import VENV_BIN, free_port, running, wait_for_http
from support.redis_server import RedisServer, redis_server
from support.served_gateway import ServedGateway, gateway_env


def replica_config(
    backend_url: str, redis_url: str | None, offload_dir: Path, prefix: str, **gateway: Any
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "gateway": {
            "include_builtins": False,
            "offload_dir": str(offload_dir),
            "rate_limit": None,
            "allow_unsandboxed": False,
            **gateway,
        },
        "servers": {
            "backend": {
                "transport": "http",
                "url": backend_url,
                "protocol": "legacy",
                "cache_ttl": 60,
                "tool_config": {"tick": {"rate_limit": "5/second"}},
            }
        },
    }
    if redis_url is not None:
        document["stores"] = {"default": redis_url, "key_prefix": prefix, "retry_after": 1.0}
    return document


@dataclass
class Cluster:
    balancer: str
    replicas: list[ServedGateway]
    redis: RedisServer | None
    backend_url: str
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> httpx2.Response:
        return httpx2.post(
            f"{self.balancer}/api/tools/{tool}/call", json={"arguments": arguments or {}}, timeout=30
        )

    def backend_counts(self) -> dict[str, int]:
        answer = self.replicas[0].call("backend.counts")
        assert answer.status_code == 200, answer.text
        return dict(json.loads(answer.json()["content"][0]["text"]))


def start_replicas(
    tmp_path: Path, configs: list[dict[str, Any]], stack: ExitStack
) -> tuple[list[ServedGateway], list[int]]:
    """Start every replica at once (they boot in parallel), then wait for each to serve the backend."""
    started = []
    for i, document in enumerate(configs):
        port = free_port()
        config = tmp_path / f"replica{i}.json"
        config.write_text(json.dumps(document))
        log = tmp_path / f"replica{i}.log"
        args = [str(VENV_BIN / "nexus"), "serve", "--config", str(config), "--port", str(port), "--no-watch"]
        proc = stack.enter_context(running(args, env=gateway_env(tmp_path / f"r{i}"), log=log))
        started.append((port, log, proc))
    replicas = []
    for port, log, proc in started:
        base = f"http://127.0.0.1:{port}"
        wait_for_http(base + "/api/servers", timeout=60, proc=proc)
        replica = ServedGateway(base, None, log, proc)
        replica.wait_state("backend", "READY")
        replicas.append(replica)
    return replicas, [port for port, _, _ in started]


@contextmanager
def cluster(tmp_path: Path, *, replicas: int = 3, shared: bool = True, **gateway: Any) -> Iterator[Cluster]:
    """`shared=False`: the same replicas without Redis (each alone: the baseline to compare with)."""
    with ExitStack() as stack:
        redis = stack.enter_context(redis_server(tmp_path / "redis")) if shared else None
        backend_port = free_port()
        backend = stack.enter_context(
            running(
                [sys.executable, "-m", "support.shared_backend", str(backend_port)],
                log=tmp_path / "backend.log",
            )
        )
        backend_url = f"http://127.0.0.1:{backend_port}/mcp"
        wait_for_http(f"http://127.0.0.1:{backend_port}/", timeout=30, proc=backend)
        offload = tmp_path / "shared-offload"
        prefix = f"t{uuid.uuid4().hex[:8]}"
        document = replica_config(backend_url, redis.url if redis else None, offload, prefix, **gateway)
        served, ports = start_replicas(tmp_path, [document] * replicas, stack)
        balancer = stack.enter_context(haproxy(tmp_path, ports))
        yield Cluster(balancer, served, redis, backend_url)
