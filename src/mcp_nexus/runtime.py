"""One running Nexus: config -> gateway (upstreams, catalog, governance, pipeline) -> frontends, with
their lifetimes, signals and graceful stop. The CLI, the tests and the benchmarks all run it this way.

    async with Runtime(config, http=True) as runtime:      # serving at once; servers join when ready
        await runtime.wait_for_stop()                       # SIGINT/SIGTERM, or runtime.request_stop()

Startup never blocks serving: the frontends are up in milliseconds with the built-in
servers, and each upstream joins the catalog when it is READY (clients hear
tools/list_changed). `wait_ready=True` keeps the old behaviour (wait for every server).
Stopping, from any state and for any reason (a signal, an exception, a failed bind), ends
every upstream the runtime started: the first signal drains calls in flight (up to
`gateway.shutdown_grace`), a second one stops at once.

SIGHUP (docs/OPERATIONS.md, "Signals"): a gateway serving HTTP re-reads its config file and
applies the difference, like `nexus reload` (without a file it logs that there is nothing to
reload); a `--stdio` gateway takes it as the hangup it is (its client or terminal went away)
and stops gracefully, like SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import signal
import socket
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from mcp_nexus import tracing
from mcp_nexus.audit.writer import AuditLog
from mcp_nexus.config.schema import NexusConfig
from mcp_nexus.config.watch import ConfigSource, ConfigWatcher
from mcp_nexus.control.control_plane import ControlPlane
from mcp_nexus.gateway import Gateway
from mcp_nexus.heap import freeze_startup_heap
from mcp_nexus.upstream import child_process
from mcp_nexus.upstream.upstream import Upstream

logger = logging.getLogger(__name__)

Progress = Callable[[Upstream], None]


class BindError(OSError):
    """The HTTP port cannot be bound (in use, or not allowed); says which and what to do."""


@dataclass
class RuntimeOptions:
    http: bool = True  # serve MCP + admin API over HTTP
    stdio: bool = False  # serve MCP over this process's stdin/stdout
    bridge: bool = True  # run the Xiaozhi bridge when endpoints are configured
    watch: bool = True  # apply config file changes while running (needs a source)
    wait_ready: bool = False  # start serving only once every server is READY or failed
    signals: bool = False  # handle SIGINT/SIGTERM and own the process's children (the CLI; tests drive stop)
    tasks: bool = True  # run the control plane's queued tasks (off for one-shot CLI gateways)
    stdio_profile: str | None = None  # the profile (config `profiles:`) the stdio client gets (--profile)


class Runtime:
    def __init__(
        self,
        config: NexusConfig,
        options: RuntimeOptions | None = None,
        *,
        source: ConfigSource | None = None,
        on_progress: Progress | None = None,
        llm: Any = None,
    ) -> None:
        self.options = options or RuntimeOptions()
        tracing.configure_from_env()  # before the gateway: its pipeline gets the trace step when on
        self.gateway = Gateway(config)
        self.gateway.config_source = source
        self.control: Any = None  # the control plane (control/control_plane.py), when configured
        if ControlPlane.wanted(config) or llm is not None:  # `llm`: an injected LLMClientProtocol
            self.control = ControlPlane(self.gateway, llm=llm)
            self.control.install()
        self.source = source
        self.on_progress = on_progress
        self.http_server: Any = None
        self.port: int | None = None
        self.stdio_task: asyncio.Task[None] | None = None
        self.bridge: Any = None  # the Xiaozhi bridge, when endpoints are configured
        self._stack = AsyncExitStack()
        self._stop = asyncio.Event()
        self._signals = 0
        self._serving = asyncio.Event()  # set once startup is over: a SIGHUP reload waits for it
        self._hangup: asyncio.Task[None] | None = None  # the reload a SIGHUP asked for
        self._hangup_again = False  # another SIGHUP came while it ran

    # -- the serving URL ------------------------------------------------------------------

    @property
    def url(self) -> str:
        settings = self.gateway.config.gateway
        host = f"[{settings.host}]" if ":" in settings.host else settings.host
        return f"http://{host}:{self.port}{settings.path}"

    # -- lifetime ---------------------------------------------------------------------------

    async def __aenter__(self) -> Runtime:
        try:
            await self._start()
        except BaseException:
            try:
                await self._shutdown(grace=0.0)
            finally:
                if self.options.signals:
                    child_process.kill_all_now()  # the process is ours: whatever the shutdown missed
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._shutdown(grace=None if exc is None else 0.0)

    async def _start(self) -> None:
        options = self.options
        if options.signals:
            self._install_signals()
        sock = self._bind() if options.http else None  # before anything starts: a busy port fails fast
        gateway = self.gateway
        if options.signals:
            # The process is ours: last out, whatever stdio group is still alive (a safety net).
            self._stack.push_async_callback(child_process.terminate_all)
        self._stack.push_async_callback(gateway.stop)
        if options.stdio and not options.http and not options.wait_ready:
            # One client: its stdio servers speak its era (its first request, read as the servers
            # spawn, says which; upstream/client_era.py). Waiting for them first, nobody would tell.
            gateway.client_era.expect()
        starting = asyncio.ensure_future(gateway.start(self.on_progress, wait=options.wait_ready))
        stopped = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({starting, stopped}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            # We are cancelled (asyncio.Runner turns a Ctrl-C that comes before our handlers
            # into a cancel of the main task): the start must be over before the shutdown
            # runs, or it would go on spawning servers behind `gateway.stop()`.
            await _cancel_and_wait(starting)
            raise
        finally:
            stopped.cancel()
        if not starting.done():  # a signal while waiting for slow servers: stop starting them
            await _cancel_and_wait(starting)
            return
        starting.result()
        if (options.http or options.stdio) and gateway.config.gateway.audit.enabled:
            # Before any frontend serves, stopped after them (LIFO): every call they take is recorded.
            audit = AuditLog(gateway.config.gateway.audit, gateway.events)
            await audit.start()
            gateway.status_providers["audit"] = audit.status
            self._stack.push_async_callback(audit.stop)
        if self.control is not None:
            # Stopped before the gateway (LIFO); its worker starts after the servers, so resumed
            # tasks find their tools. One-shot CLI gateways (tasks=False) leave queued tasks alone.
            self._stack.push_async_callback(self.control.stop)
            if options.tasks:
                await self.control.start()
        if sock is not None:
            await self._serve_http(sock)
        if options.stdio:
            from mcp_nexus.frontends.mcp.stdio import serve_stdio

            self.stdio_task = asyncio.create_task(
                serve_stdio(gateway, self.options.stdio_profile), name="stdio-frontend"
            )
            self.stdio_task.add_done_callback(lambda _t: self._stop.set())  # stdin closed: we are done
        if options.watch and self.source is not None:
            watcher = ConfigWatcher(self.source, gateway)
            watcher.start()
            self._stack.push_async_callback(watcher.stop)
        if options.bridge:
            await self._start_bridge()
        if options.http or options.stdio:  # a gateway that serves clients, not a one-command one
            self._warn_when_the_sandbox_cannot_run()
        if options.signals:  # the process is ours: what startup built lives as long as it does
            freeze_startup_heap()
        self._serving.set()

    def _warn_when_the_sandbox_cannot_run(self) -> None:
        """Said once at startup, beside the banner: each python_sandbox call says it again."""
        sandbox = self.gateway.governance.sandbox
        missing = sandbox.missing_program() if sandbox is not None else None
        if missing is None or sandbox is None:
            return
        if sandbox.allow_unsandboxed:
            logger.warning("python_sandbox runs code WITHOUT isolation (allow_unsandboxed): %s", missing)
        else:
            logger.warning("python_sandbox cannot run code: %s", missing)

    def _bind(self) -> socket.socket:
        settings = self.gateway.config.gateway
        family = socket.AF_INET6 if ":" in settings.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((settings.host, settings.port))
        except OSError as exc:
            sock.close()
            if exc.errno == errno.EADDRINUSE:
                raise BindError(
                    exc.errno,
                    f"port {settings.port} on {settings.host} is already in use; "
                    "stop what uses it or pick another with --port",
                ) from exc
            raise BindError(
                exc.errno, f"cannot listen on {settings.host}:{settings.port}: {exc.strerror}"
            ) from exc
        sock.listen(2048)
        sock.setblocking(False)
        self.port = sock.getsockname()[1]
        return sock

    async def _serve_http(self, sock: socket.socket) -> None:
        import uvicorn

        from mcp_nexus.frontends.http.app import build_http_app

        app, frontend = build_http_app(self.gateway, manage_gateway=False, port=self.port)

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self) -> Any:
                yield  # signals are the runtime's: uvicorn must neither take nor re-raise them

        server = Server(
            uvicorn.Config(
                app,
                log_level="warning",
                lifespan="on",
                # Streams still open after the drain (idle SSE listeners) are closed after this.
                timeout_graceful_shutdown=1,
            )
        )
        task = asyncio.create_task(server.serve(sockets=[sock]), name="http-frontend")
        while not server.started:
            if task.done():
                task.result()  # raises what went wrong
                raise RuntimeError("the HTTP frontend stopped while starting")
            await asyncio.sleep(0.01)
        self.http_server = server

        async def stop_http() -> None:
            server.should_exit = True
            # The calls in flight are drained by now: a client's idle listening stream (GET /mcp)
            # is what is left, and it would hold uvicorn's shutdown for timeout_graceful_shutdown.
            await _close_http_sessions(frontend.server.session_manager)
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(task, 10)
            sock.close()

        self._stack.push_async_callback(stop_http)

    async def _start_bridge(self) -> None:
        from mcp_nexus.config.xiaozhi import with_env_endpoints
        from mcp_nexus.frontends.xiaozhi import XiaozhiBridge

        gateway = self.gateway
        bridge = XiaozhiBridge(gateway, with_env_endpoints(gateway.config.xiaozhi))
        if not bridge.configured:
            return
        await bridge.start()
        self.bridge = bridge
        gateway.status_providers["xiaozhi"] = bridge.status

        async def stop_bridge() -> None:
            gateway.status_providers.pop("xiaozhi", None)
            await bridge.stop()

        self._stack.push_async_callback(stop_bridge)

    # -- stopping ---------------------------------------------------------------------------

    def request_stop(self) -> None:
        self._stop.set()

    async def wait_for_stop(self) -> None:
        await self._stop.wait()

    def _install_signals(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._on_signal, sig)
        if hasattr(signal, "SIGHUP"):  # not on Windows
            loop.add_signal_handler(signal.SIGHUP, self._on_hangup)

    def _on_hangup(self) -> None:
        if self.options.stdio:
            # Our client (or the terminal it runs in) hung up: a stdio gateway has no one left to serve.
            logger.warning("SIGHUP: the client or terminal hung up")
            self._on_signal(signal.SIGHUP)
            return
        if self._signals:
            return  # already stopping
        if self.source is None:
            logger.warning("SIGHUP: this gateway was started without a config file: nothing to reload")
            return
        if self._hangup is not None and not self._hangup.done():
            self._hangup_again = True  # one reload runs, one waits: a burst of SIGHUPs is two reloads
            return
        self._hangup = asyncio.ensure_future(self._reload_on_hangup(self.source))

    async def _reload_on_hangup(self, source: ConfigSource) -> None:
        """Re-read the config file and apply the difference, as `nexus reload` does (calls in flight go on)."""
        await self._serving.wait()
        applier = ConfigWatcher(source, self.gateway)  # its apply(): load, apply, log (never started)
        while True:
            self._hangup_again = False
            logger.info("SIGHUP: reloading %s", source.path)
            await applier.apply()
            if not self._hangup_again or self._signals:
                return

    def _on_signal(self, sig: int) -> None:
        self._signals += 1
        if self._signals == 1:
            logger.warning("%s: shutting down, letting calls in flight finish", signal.Signals(sig).name)
        else:
            logger.warning("%s again: stopping now", signal.Signals(sig).name)
            child_process.kill_all_now()  # no more waiting for anyone: the servers go first
        self._stop.set()

    async def _shutdown(self, grace: float | None) -> None:
        gateway = self.gateway
        if self._hangup is not None and not self._hangup.done():
            await _cancel_and_wait(self._hangup)  # a reload must not start servers behind the stop
        if self._signals < 2 and grace != 0.0:
            drain = asyncio.ensure_future(gateway.drain(grace))
            # A second signal while draining cuts the wait short.
            while not drain.done():
                await asyncio.wait({drain}, timeout=0.05)
                if self._signals >= 2:
                    drain.cancel()
            with contextlib.suppress(BaseException):
                await drain
        if self.stdio_task is not None and not self.stdio_task.done():
            self.stdio_task.cancel()
            with contextlib.suppress(BaseException):
                await self.stdio_task
        await self._stack.aclose()
        tracing.flush()  # the last spans leave before the process does
        if self.options.signals:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
            if hasattr(signal, "SIGHUP"):
                loop.remove_signal_handler(signal.SIGHUP)


async def _close_http_sessions(session_manager: Any) -> None:
    """End every handshake-era HTTP session (and so its GET stream) at once, all together."""
    from mcp_nexus._sdk_seams import close_http_session, http_session_ids

    ids = list(http_session_ids(session_manager))
    if ids:
        logger.debug("closing %d HTTP session(s)", len(ids))
        await asyncio.gather(
            *(close_http_session(session_manager, sid) for sid in ids), return_exceptions=True
        )


async def _cancel_and_wait(task: asyncio.Future[Any]) -> None:
    """Cancel `task` and wait until it has finished unwinding, even if we are cancelled meanwhile."""
    task.cancel()
    cancelled = False
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            cancelled = True  # passed on once the task is over
    if not task.cancelled():
        task.exception()  # retrieved: its failure is not ours to report
    if cancelled:
        raise asyncio.CancelledError
