"""Spawning and ending a stdio server's process group, so that no upstream outlives the gateway.

Each stdio server runs in a session (so a process group) of its own: a stop can then end
everything a launcher (`npx`, `uvx`, `sh -c`, `docker run`) forked, and a Ctrl-C in the
gateway's terminal does not hit the servers before the gateway decides how to stop them.
Four lines of defence, gentlest first:

1. `terminate()`, every orderly stop: close stdin, wait, SIGTERM (+SIGCONT) the group, wait,
   SIGKILL the group, reap. Safe to call twice and concurrently, and from a task that gets
   cancelled: the ending runs in a task of its own; if that task is torn down too (the event
   loop closing), the group gets SIGKILL on the spot.
2. `kill_all_now()`, for paths that cannot wait (a second Ctrl-C, an exception at startup):
   SIGKILL every group started here that may still run; `terminate_all()` is the orderly
   safety net after a stop. At interpreter exit, groups still registered get SIGTERM, then
   SIGKILL a second later.
3. The parent-death signal (Linux): the kernel SIGKILLs a server's direct process when the
   gateway dies, however it dies (SIGKILL, OOM kill, crash).
4. The orphan watchdog (`orphan_watchdog.py`): one small process per gateway that stops every
   registered group once the gateway is gone, including what a launcher forked (the
   parent-death signal does not reach grandchildren). A server execs only once its group
   is registered (see `_LAUNCH`), so nothing escapes it by being quick.

A server's stdin reaching end-of-file when the gateway dies stays the last line: it is all
that is left on macOS (no parent-death signal) when the watchdog dies with the gateway.
docs/OPERATIONS.md ("No orphan processes") states the guarantee and its limits.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import errno
import functools
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mcp_nexus import inherited_fds
from mcp_nexus.jsonrpc.lines import LineSplitter, LineSubprocessProtocol
from mcp_nexus.upstream import orphan_watchdog
from mcp_nexus.upstream.orphan_watchdog import end_groups, group_alive, signal_group

logger = logging.getLogger(__name__)

ParentDeath = Literal["auto", "setpriv", "preexec", "none"]
"""How the parent-death signal is set ("auto": setpriv, else preexec, none off Linux); see `_choose`."""

_LINUX = sys.platform.startswith("linux")
_PR_SET_PDEATHSIG = 1
_PARENT_GONE_EXIT = 111  # the exit code of a child that found its gateway already gone
_POLL_S = 0.02
_KILL_WAIT_S = 5.0  # after SIGKILL, how long to wait for the group before giving up on it
_AT_EXIT_TERM_GRACE_S = 1.0

# Every server starts as `sh -c _LAUNCH <gateway pid> <argv...>` (behind setpriv on Linux),
# which execs the server only once the gateway has registered it with the orphan watchdog
# and sent `go` on its stdin: a server the gateway dies before registering never starts
# (its stdin reaches end-of-file instead), so nothing it forks can slip past the watchdog.
# `read` takes the pipe byte by byte, so the server's stdin starts right after `go`. Then,
# with the parent-death signal already set: if the gateway died meanwhile, the signal will
# never come (PPID is no longer the gateway) - do not start at all.
_LAUNCH = f'read -r go && [ "$go" = go ] && [ "$PPID" = "$0" ] || exit {_PARENT_GONE_EXIT}; exec "$@"'
_GO = b"go\n"
_SH = "/bin/sh"


@dataclass(frozen=True)
class StopGrace:
    """How long a stopping server gets: after its stdin closes, then after SIGTERM."""

    stdin: float = 2.0
    term: float = 3.0

    @classmethod
    def within(cls, seconds: float) -> StopGrace:
        """SIGKILL after `seconds` in all: 2/5 of it after stdin closes, the rest after SIGTERM."""
        return cls(stdin=seconds * 0.4, term=seconds * 0.6)


@dataclass
class _Group:
    process: asyncio.subprocess.Process
    grace: StopGrace
    ending: asyncio.Task[int | None] | None = None


# pgid (= the server's pid, as it leads its own session) -> group, until the group is gone.
_LIVE: dict[int, _Group] = {}
# Spawns under way (forked, maybe, but not registered in _LIVE yet): terminate_all() waits for them.
_SPAWNING: set[asyncio.Future[None]] = set()
_OWNER_PID = os.getpid()  # a forked copy of this process must not signal its parent's servers


# -- spawning -------------------------------------------------------------------------------


async def spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None,
    cwd: str | None,
    stderr: Any,
    grace: StopGrace | None = None,
    limit: int = 2**16,
    parent_death: ParentDeath = "auto",
    stdout_lines: LineSplitter | None = None,
) -> asyncio.subprocess.Process:
    """Start a stdio server (stdin and stdout piped) in a new session, registered for ending.

    Must be called from the thread that runs the event loop for the server's whole life: the
    parent-death signal fires when the *thread* that forked the child ends, not the process.
    asyncio forks from the loop thread, so this holds as long as the loop thread is the one
    that lives as long as the gateway (never spawn from a worker thread of an executor).
    Raises FileNotFoundError / PermissionError for a missing or non-executable command, as
    `asyncio.create_subprocess_exec` does. With `stdout_lines`, stdout is split into lines as
    it arrives (`Process.stdout` is then left unfed).
    """
    if not argv:
        raise ValueError("a stdio server needs a command")
    grace = grace or StopGrace()
    # uvloop's spawn keeps every inheritable descriptor open in the child: what the gateway
    # inherited without close-on-exec must not reach the server (inherited_fds.py).
    inherited_fds.seal()
    method = _choose(parent_death)
    _check_executable(argv[0], env, cwd)  # behind `sh -c`, a missing command would be exit 127
    preexec = _preexec_parent_death(os.getpid()) if method == "preexec" else None
    loop = asyncio.get_running_loop()

    def protocol() -> asyncio.subprocess.SubprocessStreamProtocol:
        if stdout_lines is not None:
            return LineSubprocessProtocol(stdout_lines, limit, loop)
        return asyncio.subprocess.SubprocessStreamProtocol(limit=limit, loop=loop)

    # What asyncio.create_subprocess_exec does, with our choice of protocol. Cancelled while
    # it waits for the pipes, the loop kills the child it forked; that child is still our
    # `sh`, waiting for `go` (below), so nothing it would have started has run.
    spawning: asyncio.Future[None] = loop.create_future()
    _SPAWNING.add(spawning)
    try:
        transport, protocol_made = await loop.subprocess_exec(
            protocol,
            *_launch_argv(list(argv), os.getpid(), setpriv=method == "setpriv"),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=env,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=preexec,
        )
        # From here to `go`, no await: registered for every way of ending in the same step.
        process = asyncio.subprocess.Process(transport, protocol_made, loop)
        _LIVE[process.pid] = _Group(process, grace)
        WATCHDOG.register(process.pid, grace)
    finally:
        _SPAWNING.discard(spawning)
        spawning.set_result(None)
    assert process.stdin is not None
    process.stdin.write(_GO)  # registered: the server may start
    return process


# Setting the parent-death signal: prctl(PR_SET_PDEATHSIG) must run in the child, between
# fork and exec. Measured on the 2-core test machine (median of 50 spawns of `echo` from an
# asyncio loop with 4 extra threads; `spawn()` is time the event loop is blocked):
#
#                                   parent RSS 100 MB          parent RSS 400 MB
#                                   spawn()  program runs      spawn()  program runs
#   no wrapper, no signal (vfork)    0.5 ms    1.4 ms           2.0 ms    2.4 ms
#   setpriv --pdeathsig + sh         0.7 ms    3.2 ms           3.2 ms    6.1 ms
#   preexec_fn calling prctl + sh   14.1 ms   16.3 ms          37.8 ms   42.4 ms
#   sh only (no signal: macOS)       0.6 ms    2.1 ms           2.7 ms    4.4 ms
#
# (an earlier `python -c` wrapper that called prctl and exec'd took 10 ms more before the
# server ran.) So: setpriv (util-linux, on every mainstream Linux) when it knows --pdeathsig.
# It costs a few ms of the child's time, not the loop's, and runs no Python code between
# fork and exec - unsafe in a process with threads (a lock another thread held at fork time
# stays held forever in the child). A preexec_fn forces fork() instead of vfork(), whose cost
# grows with the gateway's memory and stalls every call in flight meanwhile; it is only the
# fallback without setpriv, and does nothing but call a prctl resolved beforehand and
# os.getppid() (no locks, no imports). macOS has no parent-death signal: the watchdog and
# stdin end-of-file remain.


def _choose(requested: ParentDeath) -> ParentDeath:
    if requested != "auto":
        return requested
    if not _LINUX:
        return "none"
    return "setpriv" if _setpriv() is not None else "preexec"


@functools.cache
def _setpriv() -> str | None:
    """setpriv's path if it supports --pdeathsig (util-linux 2.33 and later), else None."""
    path = shutil.which("setpriv") or shutil.which("setpriv", path="/usr/bin:/bin")
    if path is None:
        return None
    try:
        usage = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return path if "--pdeathsig" in usage else None


def _launch_argv(argv: list[str], parent_pid: int, *, setpriv: bool) -> list[str]:
    launch = [_SH, "-c", _LAUNCH, str(parent_pid), *argv]
    if not setpriv:
        return launch
    path = _setpriv()
    if path is None:
        raise RuntimeError("setpriv with --pdeathsig is not available on this system")
    return [path, "--pdeathsig", "KILL", "--", *launch]


def _preexec_parent_death(parent_pid: int) -> Callable[[], None]:
    prctl = _prctl()  # resolved here, in the parent: the child only calls it
    kill = int(signal.SIGKILL)

    def set_parent_death_signal() -> None:
        prctl(_PR_SET_PDEATHSIG, kill, 0, 0, 0)
        if os.getppid() != parent_pid:  # the gateway died before the signal was set
            os._exit(_PARENT_GONE_EXIT)

    return set_parent_death_signal


@functools.cache
def _prctl() -> Any:
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl


def _check_executable(command: str, env: Mapping[str, str] | None, cwd: str | None) -> None:
    """Fail like exec would, so a missing command stays an error at spawn behind `sh -c`."""
    if os.sep in command:
        path = command if os.path.isabs(command) or cwd is None else os.path.join(cwd, command)
        if not os.path.exists(path):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
        if os.path.isdir(path) or not os.access(path, os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), command)
        return
    search = (os.environ if env is None else env).get("PATH", os.defpath)
    if shutil.which(command, path=search) is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)


# -- ending ---------------------------------------------------------------------------------


async def terminate(process: asyncio.subprocess.Process, grace: StopGrace | None = None) -> int | None:
    """End `process` and its whole process group; returns its exit code.

    Closes stdin, waits `grace.stdin` for the group to be gone, sends SIGTERM and SIGCONT to
    the group, waits `grace.term`, sends SIGKILL, and waits for the process to be reaped.
    `grace` defaults to the one given to `spawn`. Concurrent and repeated calls share one
    ending. A caller that is cancelled returns at once while the ending goes on.
    """
    group = _LIVE.get(process.pid)
    if group is None or group.process is not process:
        group = _Group(process, grace or StopGrace())  # not (or no longer) registered here
    if group.ending is None:
        group.ending = asyncio.ensure_future(_end(group, grace or group.grace))
    return await asyncio.shield(group.ending)


async def _end(group: _Group, grace: StopGrace) -> int | None:
    process, pgid = group.process, group.process.pid
    try:
        if process.stdin is not None:
            with contextlib.suppress(Exception):
                process.stdin.close()
        if not await _gone(process, grace.stdin):
            signal_group(pgid, signal.SIGTERM)
            signal_group(pgid, signal.SIGCONT)  # a stopped process acts on SIGTERM only once continued
            if not await _gone(process, grace.term):
                signal_group(pgid, signal.SIGKILL)
                if not await _gone(process, _KILL_WAIT_S):
                    logger.warning(
                        "process group %d still has live members %g s after SIGKILL", pgid, _KILL_WAIT_S
                    )
    except BaseException:
        # Cancelled (the event loop is closing) or worse: no more waiting, but no survivors.
        signal_group(pgid, signal.SIGKILL)
        raise
    finally:
        if not group_alive(pgid) and _LIVE.get(pgid) is group:
            del _LIVE[pgid]
            WATCHDOG.forget(pgid)
        elif _LIVE.get(pgid) is group:
            group.ending = None  # a later terminate() tries again
    return process.returncode


async def _gone(process: asyncio.subprocess.Process, timeout: float) -> bool:
    """Wait up to `timeout` s for the process to be reaped and its group to have no live member."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    if process.returncode is None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), timeout)
        if process.returncode is None:
            return False
    # What the server forked (a launcher's real server) may outlive it in the group.
    while group_alive(process.pid):
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(_POLL_S)
    return True


async def terminate_all() -> None:
    """`terminate()` every group started here that is not known to be gone (a stop's safety net).

    Spawns under way are waited for first (a fork and a pipe connect: a loop turn or two), and
    groups registered while the others were being ended are ended too, so a server whose spawn
    was in flight when the stop began is not left out.
    """
    if os.getpid() != _OWNER_PID:
        return
    loop = asyncio.get_running_loop()
    tried: set[int] = set()
    while True:
        spawning = [future for future in _SPAWNING if future.get_loop() is loop]
        if spawning:
            await asyncio.wait(spawning, timeout=_KILL_WAIT_S)
        groups = [group for pgid, group in list(_LIVE.items()) if pgid not in tried]
        if not groups:
            return
        tried.update(group.process.pid for group in groups)
        await asyncio.gather(*(terminate(group.process) for group in groups))


def kill_all_now() -> list[int]:
    """SIGKILL every process group started here that may still run; returns the pgids signalled.

    Synchronous and immediate, for paths that cannot wait: a second Ctrl-C, an exception at
    startup. The groups stay registered until a `terminate()` (or interpreter exit) sees them gone.
    """
    if os.getpid() != _OWNER_PID:
        return []
    return [pgid for pgid in list(_LIVE) if signal_group(pgid, signal.SIGKILL)]


def live_groups() -> list[int]:
    """The process groups started here that are not known to be gone yet."""
    return sorted(_LIVE) if os.getpid() == _OWNER_PID else []


def _end_leftovers_at_exit() -> None:
    # Orderly stops leave nothing here; something that did not finish its stop did.
    if os.getpid() != _OWNER_PID or not _LIVE:
        return
    for group in list(_LIVE.values()):
        with contextlib.suppress(Exception):
            if group.process.stdin is not None:
                group.process.stdin.close()
    graces = {pgid: (0.0, min(group.grace.term, _AT_EXIT_TERM_GRACE_S)) for pgid, group in _LIVE.items()}
    ended = end_groups(graces)
    if ended:
        logger.warning("at exit: ended %d server process group(s) left running: %s", len(ended), ended)


atexit.register(_end_leftovers_at_exit)


# -- the orphan watchdog ------------------------------------------------------------------------


class OrphanWatchdog:
    """The gateway's side of `orphan_watchdog.py`: starts it on first use, tells it about groups.

    Writes never block the event loop (a full pipe drops the line with a warning), and a
    watchdog that died is started again with every live group re-registered.
    """

    _MAX_STARTS = 10  # a watchdog that keeps dying is not worth a process per spawn

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._warned = False
        self._starts = 0

    @property
    def pid(self) -> int | None:
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    def start(self) -> int | None:
        """Start the watchdog now if it is not running (spawn does it on first use anyway)."""
        with self._lock:
            return self._ensure()

    def register(self, pgid: int, grace: StopGrace) -> None:
        self._send(f"+{pgid} {grace.stdin:g} {grace.term:g}\n")

    def forget(self, pgid: int) -> None:
        self._send(f"-{pgid}\n")

    def _send(self, line: str) -> None:
        if os.getpid() != _OWNER_PID:
            return
        with self._lock:
            process = self._process
            if process is None or process.poll() is not None:
                # A new watchdog learns every live group from _LIVE, which already holds this change.
                self._ensure()
                return
            assert process.stdin is not None
            try:
                os.write(process.stdin.fileno(), line.encode())
            except BlockingIOError:
                logger.warning("the orphan watchdog is not reading; dropped %r", line.strip())
            except OSError:  # it died: start a new one and tell it everything
                self._process = None
                self._ensure()

    def _ensure(self) -> int | None:
        """Start the watchdog (caller holds the lock) and register every live group with it."""
        process = self._process
        if process is not None and process.poll() is None:
            return process.pid
        if not sys.executable or not os.path.isfile(orphan_watchdog.__file__):
            self._warn("no Python executable or watchdog script to run")
            return None
        if self._starts >= self._MAX_STARTS:
            self._warn(f"it died {self._starts} times")
            return None
        self._starts += 1
        try:
            process = subprocess.Popen(
                [sys.executable, "-I", "-S", orphan_watchdog.__file__, str(os.getpid())],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                start_new_session=True,  # a Ctrl-C or killpg aimed at the gateway must not end it first
                close_fds=True,
            )
        except OSError as exc:
            self._warn(str(exc))
            return None
        assert process.stdin is not None
        os.set_blocking(process.stdin.fileno(), False)
        self._process = process
        lines = "".join(f"+{pgid} {g.grace.stdin:g} {g.grace.term:g}\n" for pgid, g in _LIVE.items())
        if lines:
            with contextlib.suppress(OSError):
                os.write(process.stdin.fileno(), lines.encode())
        return process.pid

    def _warn(self, why: str) -> None:
        if not self._warned:
            self._warned = True
            logger.warning(
                "orphan watchdog not started (%s): if the gateway is killed, processes forked by "
                "stdio servers may survive it",
                why,
            )

    def _forget_in_forked_child(self) -> None:
        # A forked copy must neither write to its parent's watchdog nor keep its pipe open.
        process, self._process = self._process, None
        self._lock = threading.Lock()
        self._starts = 0
        if process is not None and process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()


WATCHDOG = OrphanWatchdog()


def watchdog_pid() -> int | None:
    """The running watchdog's pid (None before the first stdio server starts)."""
    return WATCHDOG.pid


def _after_fork_in_child() -> None:
    global _OWNER_PID
    _OWNER_PID = os.getpid()
    _LIVE.clear()
    _SPAWNING.clear()
    WATCHDOG._forget_in_forked_child()


os.register_at_fork(after_in_child=_after_fork_in_child)
