"""What every gateway benchmark shares: the upstream, the gateway's command line, the clients, the statistics.

Only the documented surface of Nexus is used here (the `nexus serve` command line and
the config file format of docs/CONFIG.md), so the benchmarks survive changes inside it.

The upstream is always tests/support/demo_server.py, an SDK 2.x server whose `echo`
tool answers "bench: <text>": each call carries a unique text, so an answer proves which
request it belongs to.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import functools
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TextIO

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))

import httpx2  # noqa: E402
import psutil  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

# free_port is imported for the scripts (bench.free_port), not used here
from support.processes import VENV_BIN, child_env, free_port, running, wait_for_http  # noqa: E402, F401

INSTANCE = "bench"
UPSTREAM = [sys.executable, "-m", "support.demo_server", INSTANCE]
NEXUS = str(VENV_BIN / "nexus")
PIPE_RELAY = [sys.executable, str(BENCH / "pipe_relay.py")]
NAIVE_RELAY = [sys.executable, str(BENCH / "naive_relay.py")]
# The handshake era, as IDEs and voice assistants speak it today.
CLIENT_PROTOCOL = "2025-11-25"
MCP_ACCEPT = "application/json, text/event-stream"
# Where a gateway writes (Cortex, the tool index, offloaded results): docs/CONFIG.md. The scripts
# that run the default config point it at a temporary folder, a new user's, never the real one.
DATA_DIR_ENV = "NEXUS_DATA_DIR"


def expected_echo(text: str) -> str:
    return f"{INSTANCE}: {text}"


# --- processes ---------------------------------------------------------------------------


def adopt_orphans() -> None:
    """Make this process the reaper of its descendants, so `kill_leftovers` finds grandchildren too.

    A relay killed before its upstream would otherwise leave that upstream to init, out of reach.
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def kill_leftovers(grace: float = 3.0) -> list[str]:
    """SIGTERM, then SIGKILL, every process still descending from this one; names what was left."""
    children = psutil.Process().children(recursive=True)
    names = []
    for child in children:
        with contextlib.suppress(psutil.Error):
            names.append(" ".join(child.cmdline()[:4]))
            child.terminate()
    _, alive = psutil.wait_procs(children, timeout=grace)
    for child in alive:
        with contextlib.suppress(psutil.Error):
            child.kill()
    psutil.wait_procs(alive, timeout=grace)
    return names


def write_gateway_config(path: Path, *, protocol: str = "auto", builtins: bool = False) -> Path:
    """A gateway config for the bench upstream (bare names), written to `path`.

    `builtins=True` is the default config, what users run: the built-in servers (the embedded
    Cortex and device servers) beside the bench upstream, every setting at its default but one.
    `builtins=False` is the trimmed gateway (`include_builtins: false`): the bench upstream alone.

    The one setting never left at its default: `rate_limit` is null. The default per-tool
    limit, "5/second", would answer most calls of a back-to-back benchmark with a rate-limit
    alert instead of relaying them; no benchmark can run with it, trimmed or not.
    """
    gateway: dict[str, Any] = {"rate_limit": None}
    if not builtins:
        gateway["include_builtins"] = False
    path.write_text(
        json.dumps(
            {
                "gateway": gateway,
                "servers": {
                    INSTANCE: {
                        "command": UPSTREAM[0],
                        "args": UPSTREAM[1:],
                        "namespace": "",
                        "protocol": protocol,
                        "env": {"PYTHONPATH": str(ROOT / "tests")},
                    }
                },
            }
        )
    )
    return path


def nexus_stdio_command(config: Path) -> list[str]:
    return [NEXUS, "serve", "--stdio", "--no-watch", "--config", str(config)]


def nexus_http_command(config: Path, port: int) -> list[str]:
    return [NEXUS, "serve", "--no-watch", "--port", str(port), "--config", str(config)]


@contextlib.contextmanager
def nexus_http(config: Path, port: int, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`nexus serve` on 127.0.0.1:port, its documented endpoint answering when entered, stopped when left.

    (The clients then wait until `echo` is listed: upstreams may join after the gateway serves.)
    """
    with running(nexus_http_command(config, port), log=log) as proc:
        wait_for_http(f"http://127.0.0.1:{port}/mcp", proc=proc)
        yield proc


@contextlib.contextmanager
def direct_http(port: int, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """The upstream program serving streamable HTTP itself: the like-for-like baseline of the HTTP frontend."""
    with running([*UPSTREAM, "--http", str(port)], log=log) as proc:
        wait_for_http(f"http://127.0.0.1:{port}/mcp", proc=proc)
        yield proc


@contextlib.contextmanager
def explain_failure(log: Path, lines: int = 20) -> Iterator[None]:
    """If the block fails, show the end of the log its processes wrote (it lives in a temporary folder)."""
    try:
        yield
    except BaseException:
        print_log_tail(log, lines)
        raise


def print_log_tail(log: Path, lines: int = 20) -> None:
    tail = log.read_text(errors="replace").splitlines()[-lines:] if log.exists() else ["(no log)"]
    print(f"--- last lines of {log.name}:", *tail, "---", sep="\n", file=sys.stderr)


def rss_mb(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / 2**20


# --- statistics --------------------------------------------------------------------------


def percentile(samples: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of samples."""
    ordered = sorted(samples)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def split(calls: int, rounds: int) -> list[int]:
    """`calls` shared as evenly as can be among `rounds` rounds."""
    return [calls // rounds + (1 if r < calls % rounds else 0) for r in range(rounds)]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.3f} ms"


def latency_row(name: str, samples: Sequence[float], baseline: float | None, width: int = 44) -> str:
    """One aligned line: median, p95, p99 and the ratio of medians to `baseline` (seconds)."""
    median = statistics.median(samples)
    ratio = f"{median / baseline:5.2f}x" if baseline else "  1.00x"
    return (
        f"{name:<{width}} median {ms(median)}   p95 {ms(percentile(samples, 95))}"
        f"   p99 {ms(percentile(samples, 99))}   ratio {ratio}"
    )


def verdict(ratio: float, limit: float, *, at_most: bool = True) -> str:
    met = ratio <= limit if at_most else ratio >= limit
    sign = "<=" if at_most else ">="
    return f"{ratio:5.2f}x  (target {sign} {limit:.2f}x: {'met' if met else 'NOT met'})"


# --- sequential calls through the SDK client ---------------------------------------------


# The two client eras a benchmark speaks, by the SDK `Client`'s `mode`: "legacy" is the
# initialize handshake (2025-11-25, as IDEs speak today); "auto" probes server/discover and
# speaks 2026-07-28 with a server that offers it (an SDK 2.x server, Nexus), else falls back.
ERAS = {"legacy": CLIENT_PROTOCOL, "auto": "2026-07-28"}


def expect_era(client: Client, name: str, mode: str) -> None:
    """Fail unless `client` speaks the era `mode` asks for: a fallback would compare two eras."""
    if client.protocol_version != ERAS[mode]:
        raise AssertionError(f"{name}: mode={mode!r} negotiated {client.protocol_version}, not {ERAS[mode]}")


async def open_stdio_client(
    stack: AsyncExitStack, command: list[str], errlog: TextIO, mode: str = "legacy"
) -> Client:
    """An SDK client (`mode`: "legacy", the handshake era as IDEs speak, or "auto": 2026-07-28
    where the server offers it) on a child process; its stderr goes to errlog."""
    params = StdioServerParameters(command=command[0], args=command[1:], env=child_env())
    return await stack.enter_async_context(Client(stdio_client(params, errlog=errlog), mode=mode))


async def stdio_rounds(
    commands: dict[str, list[str]], calls: int, rounds: int, errlog_path: Path, mode: str = "legacy"
) -> dict[str, list[float]]:
    """An SDK client (`mode`) on each command (their stderr to `errlog_path`), each checked to
    speak that era, measured in interleaved rounds."""
    with open(errlog_path, "a") as errlog:
        async with AsyncExitStack() as stack:
            clients = {}
            for name, cmd in commands.items():
                clients[name] = await open_stdio_client(stack, cmd, errlog, mode)
                expect_era(clients[name], name, mode)
            return await interleaved_rounds(clients, calls, rounds)


async def open_http_client(stack: AsyncExitStack, url: str, mode: str = "legacy") -> Client:
    client = await stack.enter_async_context(Client(url, mode=mode))
    expect_era(client, url, mode)
    return client


async def call_echo(client: Client, text: str) -> None:
    result = await client.call_tool("echo", {"text": text})
    got = getattr(result.content[0], "text", None) if result.content else None
    if result.is_error or got != expected_echo(text):
        raise AssertionError(f"echo({text!r}) answered {got!r} (is_error={result.is_error})")


# Upstreams may join after a gateway already serves (startup need not wait for a slow server):
# a benchmark starts only once `echo` is listed, never on the first call's luck.
READY_TIMEOUT = 60.0


async def wait_until_listed(list_names: Callable[[], Awaitable[set[str]]], what: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while "echo" not in await list_names():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not list the tool `echo` within {READY_TIMEOUT:.0f} s")
        await asyncio.sleep(0.1)


async def sdk_tool_names(client: Client) -> set[str]:
    return {tool.name for tool in (await client.list_tools(cache_mode="bypass")).tools}


async def interleaved_rounds(clients: dict[str, Client], calls: int, rounds: int) -> dict[str, list[float]]:
    """`calls` sequential echo calls per client in interleaved rounds, so drift hits every variant alike.

    The order rotates each round (A B C, B C A, C A B, ...) and a short pause separates the
    blocks, so no variant always inherits the after-work (GC, log writes, session cleanup)
    of the same heavier neighbour.
    """
    for name, client in clients.items():
        await wait_until_listed(functools.partial(sdk_tool_names, client), name)
        for _ in range(20):  # warm-up: imports, caches and first-call paths
            await call_echo(client, "warm-up")
    samples: dict[str, list[float]] = {name: [] for name in clients}
    names = list(clients)
    for number, count in enumerate(split(calls, rounds)):
        for name in names[number % len(names) :] + names[: number % len(names)]:
            client = clients[name]
            await asyncio.sleep(0.05)
            for _ in range(count):
                started = time.perf_counter()
                await call_echo(client, "x")
                samples[name].append(time.perf_counter() - started)
    return samples


# --- concurrent load with per-call checks ------------------------------------------------


@dataclass
class LoadResult:
    """What a load run saw: every call is answered correctly, misrouted, failed, or lost."""

    calls: int = 0
    elapsed: float = 0.0
    latencies: list[float] = field(default_factory=list)
    misrouted: int = 0  # an answer carrying another call's payload, or an id nobody asked for
    duplicated: int = 0  # a second answer to an id already answered
    failed: int = 0  # an error answer (JSON-RPC error, isError, HTTP status)
    lost: int = 0  # never answered
    stray_lines: int = 0  # stdout lines that are not JSON
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> int:
        return len(self.latencies)

    @property
    def clean(self) -> bool:
        return self.ok == self.calls and not (
            self.misrouted or self.duplicated or self.failed or self.lost or self.stray_lines
        )

    @property
    def rate(self) -> float:
        return self.calls / self.elapsed if self.elapsed else 0.0

    def note(self, problem: str) -> None:
        if len(self.problems) < 5:  # the first few say what went wrong; the counts say how often
            self.problems.append(problem)

    def merge(self, other: LoadResult) -> None:
        self.calls += other.calls
        self.elapsed += other.elapsed
        self.latencies += other.latencies
        self.misrouted += other.misrouted
        self.duplicated += other.duplicated
        self.failed += other.failed
        self.lost += other.lost
        self.stray_lines += other.stray_lines
        for problem in other.problems:
            self.note(problem)

    def report(self, name: str, width: int = 34) -> str:
        checks = (
            f"ok {self.ok}/{self.calls}, lost {self.lost}, misrouted {self.misrouted}, "
            f"duplicated {self.duplicated}, failed {self.failed}"
            + (f", non-JSON lines {self.stray_lines}" if self.stray_lines else "")
        )
        timing = (
            f"p50 {ms(percentile(self.latencies, 50))}  p99 {ms(percentile(self.latencies, 99))}"
            if self.latencies
            else "no answers"
        )
        lines = [f"{name:<{width}} {self.rate:8.1f} calls/s   {timing}   [{checks}]"]
        lines += [f"{'':<{width}}   ! {problem}" for problem in self.problems]
        return "\n".join(lines)


def _echo_text(message: dict[str, Any]) -> str | None:
    result = message.get("result")
    if not isinstance(result, dict) or result.get("isError"):
        return None
    content = result.get("content")
    if isinstance(content, list) and content and isinstance(content[0], dict):
        text = content[0].get("text")
        return text if isinstance(text, str) else None
    return None


def _names_in(answer: dict[str, Any] | None) -> set[str]:
    tools = (answer or {}).get("result", {}).get("tools", [])
    return {str(tool.get("name")) for tool in tools if isinstance(tool, dict)}


def _check_answer(result: LoadResult, message: dict[str, Any], payload: str, started: float) -> None:
    text = _echo_text(message)
    if text == expected_echo(payload):
        result.latencies.append(time.perf_counter() - started)
    elif text is not None:
        result.misrouted += 1
        result.note(f"call with payload {payload!r} answered {text!r}")
    else:
        result.failed += 1
        result.note(f"call with payload {payload!r} failed: {json.dumps(message)[:300]}")


class LeanStdioClient:
    """A blocking, lean JSON-RPC client on a child's pipes, for CPU-time benchmarks.

    `era="legacy"`: the handshake era (initialize, then plain requests). `era="modern"`: the
    2026-07-28 era as the SDK's `Client(mode="auto")` speaks it on stdio (server/discover, then
    every request carries the envelope in `_meta`). Started, it has done the handshake (or the
    discovery) and one successful `echo` (a gateway serves before its upstream has joined, so
    the first calls may fail); `call` sends one request and returns its answer.
    """

    def __init__(self, command: list[str], env: dict[str, str] | None = None, era: str = "legacy") -> None:
        if era not in ("legacy", "modern"):
            raise ValueError(f"era must be 'legacy' or 'modern', got {era!r}")
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._stdin, self._stdout = self.proc.stdin, self.proc.stdout
        self._envelope = MODERN_ENVELOPE if era == "modern" else None
        if self._envelope is None:
            self.call(initialize_message(0))
            self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        elif "result" not in (found := self.call({"jsonrpc": "2.0", "id": 0, "method": "server/discover"})):
            raise AssertionError(f"server/discover failed: {found}")
        for _ in range(400):
            if "result" in self.call(call_message(1, "warm")):
                break
            time.sleep(0.05)

    def _line(self, message: dict[str, Any]) -> bytes:
        if self._envelope is not None and "method" in message and "id" in message:
            message = {**message, "params": {**message.get("params", {}), "_meta": self._envelope}}
        return json.dumps(message).encode() + b"\n"

    def send(self, message: dict[str, Any]) -> None:
        self._stdin.write(self._line(message))
        self._stdin.flush()

    def call(self, message: dict[str, Any]) -> dict[str, Any]:
        self.send(message)
        while True:
            answer: dict[str, Any] = json.loads(self._stdout.readline())
            if "id" in answer and "method" not in answer:
                return answer

    def pipelined(self, first_id: int, count: int, in_flight: int) -> None:
        """`count` echo calls with up to `in_flight` unanswered at once; every answer must be a result."""
        sent = answered = 0
        while answered < count:
            while sent < count and sent - answered < in_flight:
                self._stdin.write(self._line(call_message(first_id + sent, "x")))
                sent += 1
            self._stdin.flush()
            answer = json.loads(self._stdout.readline())
            if "id" in answer and "method" not in answer:
                if "result" not in answer:
                    raise AssertionError(f"call {answer.get('id')} failed: {answer}")
                answered += 1

    def close(self) -> None:
        self._stdin.close()
        self.proc.wait(timeout=30)


def call_message(request_id: int | str, payload: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": payload}},
    }


def initialize_message(request_id: int | str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": CLIENT_PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "nexus-bench", "version": "1"},
        },
    }


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}

# What a 2026-07-28 client puts in every request's `_meta` (as the SDK's Client sends it on stdio).
MODERN_PROTOCOL = "2026-07-28"
MODERN_ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN_PROTOCOL,
    "io.modelcontextprotocol/clientInfo": {"name": "nexus-bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


class HttpMcpClient:
    """A lean streamable-HTTP MCP client (one connection, one session) so the servers, not the client, set the pace."""

    def __init__(self, url: str, timeout: float) -> None:
        self.url = url
        self.http = httpx2.AsyncClient(
            timeout=timeout, limits=httpx2.Limits(max_connections=1, max_keepalive_connections=1)
        )
        self.headers = {"Accept": MCP_ACCEPT, "Content-Type": "application/json"}

    async def open(self) -> None:
        response = await self.http.post(self.url, json=initialize_message(0), headers=self.headers)
        response.raise_for_status()
        answer = self.answer_in(response, 0)
        if answer is None or "result" not in answer:
            raise AssertionError(f"initialize at {self.url} answered {response.text[:300]!r}")
        if session := response.headers.get("mcp-session-id"):
            self.headers["mcp-session-id"] = session
        self.headers["mcp-protocol-version"] = answer["result"]["protocolVersion"]
        done = await self.http.post(self.url, json=INITIALIZED, headers=self.headers)
        if done.status_code >= 300:
            raise AssertionError(f"notifications/initialized at {self.url}: HTTP {done.status_code}")

    async def tool_names(self) -> set[str]:
        message = {"jsonrpc": "2.0", "id": "list", "method": "tools/list", "params": {}}
        response = await self.http.post(self.url, json=message, headers=self.headers)
        answer = self.answer_in(response, "list") if response.status_code == 200 else None
        return _names_in(answer)

    @staticmethod
    def answer_in(response: httpx2.Response, request_id: int | str) -> dict[str, Any] | None:
        """The JSON-RPC answer to request_id in a JSON or an SSE body (progress or log messages may precede it)."""
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            messages = [
                json.loads(line[5:])
                for line in response.text.splitlines()
                if line.startswith("data:") and line[5:].strip()
            ]
        else:
            body = response.json() if response.content else None
            messages = body if isinstance(body, list) else [body]
        return next((m for m in messages if isinstance(m, dict) and m.get("id") == request_id), None)

    async def call(self, request_id: int, payload: str, result: LoadResult) -> None:
        started = time.perf_counter()
        try:
            response = await self.http.post(
                self.url, json=call_message(request_id, payload), headers=self.headers
            )
        except httpx2.HTTPError as exc:
            result.lost += 1
            result.note(f"call {request_id}: {type(exc).__name__}: {exc}")
            return
        if response.status_code != 200:
            result.failed += 1
            result.note(f"call {request_id}: HTTP {response.status_code} {response.text[:200]!r}")
            return
        answer = self.answer_in(response, request_id)
        if answer is None:
            result.misrouted += 1
            result.note(f"call {request_id}: no answer with its id in {response.text[:200]!r}")
            return
        _check_answer(result, answer, payload, started)

    async def close(self) -> None:
        with contextlib.suppress(httpx2.HTTPError):
            if "mcp-session-id" in self.headers:
                await self.http.delete(self.url, headers=self.headers)
        await self.http.aclose()


@contextlib.asynccontextmanager
async def http_clients(url: str, count: int, timeout: float = 60.0) -> AsyncIterator[list[HttpMcpClient]]:
    """`count` initialised sessions on url, each on its own connection; closed on exit."""
    clients = [HttpMcpClient(url, timeout) for _ in range(count)]
    try:
        await asyncio.gather(*(client.open() for client in clients))
        await wait_until_listed(clients[0].tool_names, url)
        yield clients
    finally:
        await asyncio.gather(*(client.close() for client in clients), return_exceptions=True)


async def http_load(clients: list[HttpMcpClient], calls: int) -> LoadResult:
    """`calls` echo calls shared among the clients, each client one call at a time (len(clients) in flight)."""
    result = LoadResult(calls=calls)
    tag = uuid.uuid4().hex[:8]
    next_call = iter(range(calls))

    async def worker(client: HttpMcpClient) -> None:
        for i in next_call:  # one shared iterator: the clients take turns drawing calls from it
            await client.call(i + 1, f"{tag}-{i}", result)

    started = time.perf_counter()
    await asyncio.gather(*(worker(client) for client in clients))
    result.elapsed = time.perf_counter() - started
    return result


class StdioPeer:
    """A child speaking newline-delimited JSON-RPC on its stdin/stdout, driven with many requests in flight."""

    def __init__(self, command: list[str], errlog: IO[str]) -> None:
        self.command = command
        self.errlog = errlog
        self.process: asyncio.subprocess.Process | None = None
        self.next_id = (
            1  # ids never repeat over several pipeline runs, so a late answer cannot pass for a new one
        )

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    async def __aenter__(self) -> StdioPeer:
        self.process = await asyncio.create_subprocess_exec(
            *self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=self.errlog,
            env=child_env(),
            limit=64 * 2**20,
            start_new_session=True,  # so the whole group (gateway and upstreams) can be stopped at once
        )
        self.send(initialize_message("init"))
        while True:
            message = await self.read(timeout=60)
            if message is not None and message.get("id") == "init":
                break
        if "result" not in message:
            raise AssertionError(f"initialize failed: {message}")
        self.send(INITIALIZED)
        await wait_until_listed(self.tool_names, " ".join(self.command[:3]))
        return self

    async def tool_names(self) -> set[str]:
        """tools/list, answered before anything else is sent (only used before the load starts)."""
        self.send({"jsonrpc": "2.0", "id": "list", "method": "tools/list", "params": {}})
        while True:
            message = await self.read(timeout=60)
            if message is not None and message.get("id") == "list":
                return _names_in(message)

    async def __aexit__(self, *exc: object) -> None:
        process = self.process
        if process is None:
            return
        if process.stdin is not None and not process.stdin.is_closing():
            process.stdin.close()  # the documented way to end a stdio server
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # anything of its group still alive

    def send(self, message: dict[str, Any]) -> None:
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")

    async def read(self, timeout: float) -> dict[str, Any] | None:
        """The next JSON object on stdout; None for a line that is not one. EOFError when stdout closes."""
        assert self.process is not None and self.process.stdout is not None
        async with asyncio.timeout(timeout):
            line = await self.process.stdout.readline()
        if not line:
            raise EOFError(f"{self.command[0]} closed its stdout (exit code {self.process.returncode})")
        try:
            message = json.loads(line)
        except ValueError:
            return None
        return message if isinstance(message, dict) else None

    async def pipeline(self, calls: int, in_flight: int, idle_timeout: float = 30.0) -> LoadResult:
        """`calls` echo calls with up to `in_flight` unanswered at any time; checks every id is answered once, with its own payload."""
        assert self.process is not None and self.process.stdin is not None
        result = LoadResult(calls=calls)
        tag = uuid.uuid4().hex[:8]
        pending: dict[int, tuple[str, float]] = {}
        answered: set[int] = set()
        slots = asyncio.Semaphore(in_flight)
        all_sent = asyncio.Event()

        async def read_answers() -> None:
            try:
                while pending or not all_sent.is_set():
                    await read_one()
            except (TimeoutError, EOFError) as exc:
                result.note(f"stopped reading: {type(exc).__name__} {exc}")
            finally:
                for _ in range(in_flight):  # unblock the writer, which then sees the reader is done
                    slots.release()

        async def read_one() -> None:
            message = await self.read(timeout=idle_timeout)
            if message is None:
                result.stray_lines += 1
                return
            request_id = message.get("id")
            if "method" in message or request_id is None:
                return  # a notification or a request from the server (progress, logging, ...)
            if not isinstance(request_id, int) or isinstance(request_id, bool):
                result.misrouted += 1
                result.note(f"answer with an id nobody sent: {json.dumps(message)[:200]}")
            elif request_id in pending:
                payload, started = pending.pop(request_id)
                answered.add(request_id)
                _check_answer(result, message, payload, started)
                slots.release()
            elif request_id in answered:
                result.duplicated += 1
                result.note(f"id {request_id} answered twice")
            else:
                result.misrouted += 1
                result.note(f"answer with an id nobody sent: {json.dumps(message)[:200]}")

        reader = asyncio.create_task(read_answers())
        started = time.perf_counter()
        stdin = self.process.stdin
        first = self.next_id
        self.next_id += calls
        for i in range(first, first + calls):
            await slots.acquire()
            if reader.done():
                break
            pending[i] = (f"{tag}-{i}", time.perf_counter())
            self.send(call_message(i, pending[i][0]))
            if (i - first) % in_flight == 0:
                await stdin.drain()
        await stdin.drain()
        all_sent.set()
        if not pending:  # all answered while the last drain ran: the reader waits for a line that never comes
            reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
        result.elapsed = time.perf_counter() - started
        result.lost = calls - len(answered)
        return result


def add_variant_options(parser: argparse.ArgumentParser) -> None:
    """`--era` (the lean client's: "legacy", the handshake era, or "modern", 2026-07-28) and
    `--builtins` (the default config, built-in servers on): the options of the CPU benchmarks."""
    parser.add_argument(
        "--era",
        choices=["legacy", "modern"],
        default="legacy",
        help="the client's: handshake era (default) or 2026-07-28 (server/discover, the envelope per request)",
    )
    parser.add_argument(
        "--builtins",
        action="store_true",
        help="the default config (built-in servers on, never called) instead of, or beside, the trimmed one",
    )


def safe_cleanup() -> None:
    """Called at the end of every benchmark: nothing it started may outlive it."""
    leftovers = kill_leftovers()
    if leftovers:
        print(f"cleaned up {len(leftovers)} leftover process(es): {leftovers}", file=sys.stderr)


# --- a gateway run under a bench script, its recording switched by signals ---------------


def serve_switched(on_start: Callable[[], None], on_stop: Callable[[], None], argv: list[str]) -> None:
    """The gateway side: `nexus ARGV` in this process; SIGUSR1 calls `on_start`, SIGUSR2 `on_stop`
    (which writes the record the driver waits for)."""
    signal.signal(signal.SIGUSR1, lambda *_: on_start())
    signal.signal(signal.SIGUSR2, lambda *_: on_stop())
    from mcp_nexus.cli.app import app

    sys.argv = ["nexus", *argv]
    app()


def switched_calls(
    script: str,
    record: Path,
    protocol: str,
    warm_up: int,
    calls: int,
    *,
    builtins: bool = False,
    era: str = "legacy",
) -> list[float]:
    """The driver side: `nexus serve --stdio` run under `script --serve RECORD` (which calls
    `serve_switched`), `warm_up` echo calls, SIGUSR1, `calls` timed calls, SIGUSR2; returns
    the timed calls' latencies once RECORD is written. `builtins`: the default config
    (`write_gateway_config`), else the trimmed one; `era`: the client's (`LeanStdioClient`)."""
    config = write_gateway_config(record.with_suffix(".config.json"), protocol=protocol, builtins=builtins)
    command = [sys.executable, script, "--serve", str(record), "serve", "--stdio", "--no-watch"]
    client = LeanStdioClient([*command, "--config", str(config)], env=child_env(), era=era)
    latencies: list[float] = []
    try:
        for n in range(warm_up):
            client.call(call_message(n + 2, "x"))
        os.kill(client.proc.pid, signal.SIGUSR1)
        time.sleep(0.2)
        for n in range(calls):
            started = time.perf_counter()
            if "result" not in client.call(call_message(n + 10_000_000, "x")):
                raise AssertionError(f"call {n} failed through {script}")
            latencies.append(time.perf_counter() - started)
        os.kill(client.proc.pid, signal.SIGUSR2)
        for _ in range(100):  # written by the gateway's signal handler
            if record.exists():
                return latencies
            time.sleep(0.05)
        raise AssertionError(f"the gateway under {script} wrote no record to {record}")
    finally:
        client.close()
