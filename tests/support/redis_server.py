"""A real `redis-server` (Debian's) for tests: its own port on 127.0.0.1, its own folder, nothing saved.

with redis_server(tmp_path) as redis:
    url = redis.url            # redis://127.0.0.1:<port>/0
    redis.stop()               # Redis down (the port stays reserved for the restart)
    redis.start()              # back, empty, on the same port
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from support.polling import eventually_sync
from support.processes import free_port, port_open, stop_process, wait_for_port


def redis_binary() -> str:
    found = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not Path(found).exists():
        raise AssertionError("redis-server is missing: run scripts/setup.sh (Debian package redis-server)")
    return found


class RedisServer:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        folder.mkdir(parents=True, exist_ok=True)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        args = [
            redis_binary(),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.folder),
            "--save", "",
            "--appendonly", "no",
            "--daemonize", "no",
            "--protected-mode", "yes",
        ]  # fmt: skip
        log = open(self.folder / "redis.log", "ab")  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()  # the child has its own descriptor
        wait_for_port(self.port, timeout=15, proc=self.proc)

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
            self.proc = None
        eventually_sync(lambda: not port_open(self.port), 10, f"redis on {self.port} to stop")


@contextmanager
def redis_server(folder: Path) -> Iterator[RedisServer]:
    server = RedisServer(folder)
    server.start()
    try:
        yield server
    finally:
        server.stop()
