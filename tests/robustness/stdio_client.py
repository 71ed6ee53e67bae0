"""`nexus serve --stdio` as a subprocess, with a reader thread that records every stdout line.

Every line is parsed strictly as it arrives (see wire.py); lines that are not valid JSON, or
not well-formed JSON-RPC, are kept in `problems` so a test can fail on them. Waiting for an
answer is bounded: a missing answer fails within its timeout, and a dead gateway fails at
once with the tail of its stderr (where the traceback is).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robustness.wire import NotStrictJson, id_key, is_answer, shape_problem, strict_loads
from support.processes import VENV_BIN, child_env, stop_process

HANDSHAKE_VERSION = "2025-11-25"


@dataclass
class OutLine:
    at: float
    raw: bytes
    message: Any = None
    problem: str | None = None


class GatewayDied(AssertionError):
    pass


class StdioGateway:
    """One gateway process spoken to over its stdin/stdout, one JSON-RPC message per line."""

    def __init__(self, config: Path, stderr_log: Path, command: list[str] | None = None) -> None:
        self.config = config
        self.stderr_log = stderr_log
        self.lines: list[OutLine] = []
        self._cond = threading.Condition()
        self._write_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._stderr = open(stderr_log, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            command or [str(VENV_BIN / "nexus"), "serve", "--stdio", "--no-watch", "--config", str(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=child_env(),
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, name="stdio-gateway-reader", daemon=True)
        self._reader.start()

    # -- lifetime ----------------------------------------------------------------------------

    def handshake(self, timeout: float = 60.0) -> dict[str, Any]:
        """initialize + notifications/initialized, as a handshake-era desktop client does."""
        answer = self.request(
            "initialize",
            {
                "protocolVersion": HANDSHAKE_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "robustness-tests", "version": "1"},
            },
            timeout=timeout,
        )
        assert "result" in answer, f"initialize failed: {answer}"
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def stderr_tail(self, lines: int = 6) -> str:
        self._stderr.flush()
        try:
            text = self.stderr_log.read_text(errors="replace")
        except OSError:
            return ""
        kept = [
            line for line in text.splitlines() if line.strip() and not set(line.strip()) <= set("│╭╮╰╯─ ")
        ]
        return "\n".join(kept[-lines:])

    def death_note(self) -> str:
        return f"the gateway exited with rc {self.proc.returncode}; stderr ends with:\n{self.stderr_tail()}"

    def stop(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        stop_process(self.proc)  # type: ignore[arg-type]
        self._reader.join(timeout=5)
        self._stderr.close()

    # -- output ------------------------------------------------------------------------------

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = OutLine(time.monotonic(), raw)
            try:
                line.message = strict_loads(raw)
                line.problem = shape_problem(line.message)
            except NotStrictJson as exc:
                line.problem = f"not valid JSON ({exc}): {raw[:200]!r}"
            self._answer_server_request(line.message)
            with self._cond:
                self.lines.append(line)
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def _answer_server_request(self, message: Any) -> None:
        """Requests from the gateway (ping, roots, sampling) get a quick answer: nothing may wait on us."""
        if isinstance(message, dict) and isinstance(message.get("method"), str) and "id" in message:
            if message["method"] == "ping":
                answer: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"], "result": {}}
            else:
                error = {"code": -32601, "message": "not supported by this test client"}
                answer = {"jsonrpc": "2.0", "id": message["id"], "error": error}
            # From another thread: this one must keep draining stdout whatever stdin does.
            threading.Thread(target=self._send_quietly, args=(answer,), daemon=True).start()

    def _send_quietly(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(AssertionError):
            self.send(message)

    def mark(self) -> int:
        with self._cond:
            return len(self.lines)

    def since(self, mark: int) -> list[OutLine]:
        with self._cond:
            return list(self.lines[mark:])

    def answers_since(self, mark: int) -> list[dict[str, Any]]:
        return [line.message for line in self.since(mark) if is_answer(line.message)]

    def problems_since(self, mark: int) -> list[str]:
        return [line.problem for line in self.since(mark) if line.problem]

    # -- input -------------------------------------------------------------------------------

    def send_line(self, raw: bytes) -> None:
        """Write one line (a newline is added); a dead gateway fails the test with its traceback."""
        assert self.proc.stdin is not None
        with self._write_lock:
            try:
                self.proc.stdin.write(raw.rstrip(b"\n") + b"\n")
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError) as exc:
                self.proc.wait(timeout=5)
                raise GatewayDied(f"could not write ({exc}): {self.death_note()}") from None

    def send(self, message: Any) -> None:
        self.send_line(json.dumps(message, separators=(",", ":")).encode())

    def next_id(self, prefix: str = "t") -> str:
        return f"{prefix}-{next(self._ids)}"

    def wait_for(self, request_id: Any, *, mark: int = 0, timeout: float = 10.0) -> dict[str, Any]:
        """The first answer carrying `request_id` after `mark`."""
        return self.wait_for_any((request_id,), mark=mark, timeout=timeout)

    def wait_for_any(
        self, request_ids: tuple[Any, ...], *, mark: int = 0, timeout: float = 10.0
    ) -> dict[str, Any]:
        """The first answer after `mark` that carries one of `request_ids` (None: a null id)."""
        keys = {id_key(request_id) for request_id in request_ids}
        key = " or ".join(sorted(keys))
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for line in self.lines[mark:]:
                    if is_answer(line.message) and id_key(line.message.get("id")) in keys:
                        return dict(line.message)
                if not self.alive:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(
                        f"no answer to id {key} within {timeout} s (gateway alive); stderr ends with:\n"
                        f"{self.stderr_tail()}"
                    )
                self._cond.wait(min(remaining, 0.2))
        self.proc.wait(timeout=5)
        raise GatewayDied(f"no answer to id {key}: {self.death_note()}")

    def request(
        self, method: str, params: Any = None, *, request_id: Any = None, timeout: float = 10.0
    ) -> dict[str, Any]:
        rid = self.next_id() if request_id is None else request_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        mark = self.mark()
        self.send(message)
        return self.wait_for(rid, mark=mark, timeout=timeout)

    def sentinel(self, *, timeout: float = 10.0) -> str:
        """A ping after whatever was sent: once it is answered, everything before it was read."""
        rid = self.next_id("sentinel")
        answer = self.request("ping", request_id=rid, timeout=timeout)
        assert "result" in answer, f"ping failed: {answer}"
        return rid
