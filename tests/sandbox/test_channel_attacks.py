"""Attacks on the tool channel itself (code mode): code that talks to descriptor 3 by hand, floods it,
sends garbage or huge lines, tries to turn it into a way to the host, or tries to start code again.

Each runs in a real bubblewrap sandbox through the real `CodeMode` and `ToolChannel`; the tools
behind the channel are a small in-process set (channel_bench.py) that records every call that
reached one, so a test can prove what did not.
"""

from __future__ import annotations

import socket
import textwrap
from collections.abc import Iterator

import pytest

from mcp_nexus.pipeline.call import Caller
from mcp_nexus.pipeline.code_channel import MAX_BAD_LINES, MAX_BOOKKEEPING_REQUESTS
from mcp_nexus.pipeline.code_mode import CodeMode
from mcp_nexus.sandbox import Sandbox

from .channel_bench import ToolBench, code_mode

pytestmark = pytest.mark.usefixtures("no_leftover_processes")

CALLER = Caller("stdio", "attacker")


def code(body: str) -> str:
    return textwrap.dedent(body).strip() + "\n"


# Speaks the channel by hand: what a hostile run can do without the provided client.
RAW = """
import json, os
def send(line):
    view = memoryview(line)
    while view:
        view = view[os.write(3, view):]
buffer = b""
def answer():
    global buffer
    while b"\\n" not in buffer:
        chunk = os.read(3, 65536)
        if not chunk:
            return None
        buffer += chunk
    line, _, buffer = buffer.partition(b"\\n")
    return json.loads(line)
"""


@pytest.fixture
def bench() -> ToolBench:
    return ToolBench()


@pytest.fixture
def mode(sandbox: Sandbox, bench: ToolBench) -> CodeMode:
    return code_mode(sandbox, bench, tool_calls=5, answer_bytes=64 * 1024, request_bytes=16 * 1024)


@pytest.fixture
def loopback_listener() -> Iterator[socket.socket]:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    yield listener
    listener.close()


async def test_calls_over_the_bound_are_refused_naming_the_setting(mode: CodeMode, bench: ToolBench) -> None:
    run = await mode.run(
        code(
            """
            for n in range(8):
                try:
                    call_tool("t.echo", {"n": n})
                except ToolError as error:
                    print(n, error.kind, error)
                    break
            """
        ),
        CALLER,
    )
    assert run.ok, run.result.stderr
    assert run.result.stdout.startswith("5 limit this run already made 5 tool calls"), run.result.stdout
    assert "sandbox_tool_calls" in run.result.stdout
    assert bench.calls == [("t.echo", "sandbox")] * 5
    assert run.tool_calls == 5


async def test_a_flood_of_calls_written_by_hand_reaches_no_more_tools_than_the_bound(
    mode: CodeMode, bench: ToolBench
) -> None:
    # 20,000 requests written without reading a single answer: the gateway answers the first five
    # through the tools and the rest with the limit, until the code's unread answers fill the
    # socket and the wall-clock limit ends the run.
    flood = RAW + code(
        """
        line = b'{"id": 1, "op": "call", "name": "t.echo", "arguments": {}}\\n'
        send(line * 20000)
        print("sent")
        """
    )
    run = await mode.run(flood, CALLER)
    assert len(bench.calls) == 5, bench.calls
    assert run.result.timed_out or run.ok


async def test_a_flood_of_bookkeeping_requests_closes_the_channel(mode: CodeMode, bench: ToolBench) -> None:
    run = await mode.run(
        RAW
        + code(
            """
            kinds = []
            for n in range(200):
                send(b'{"id": %d, "op": "list"}\\n' % n)
                got = answer()
                kinds.append(got.get("kind", "ok"))
                if got.get("kind") == "closed":
                    kinds.append("eof" if answer() is None else "still open")
                    break
            print(kinds.count("ok"), kinds[-2:])
            """
        ),
        CALLER,
    )
    assert run.ok, run.result.stderr
    served = MAX_BOOKKEEPING_REQUESTS - 1  # `start` (the client's first request) is one of them
    assert run.result.stdout.strip() == f"{served} ['closed', 'eof']", run.result.stdout


async def test_malformed_lines_are_answered_and_a_stream_of_them_closes_the_channel(
    mode: CodeMode, bench: ToolBench
) -> None:
    run = await mode.run(
        RAW
        + code(
            """
            send(b"not json\\n")
            print(answer())
            send(b"[1, 2]\\n")
            print(answer()["error"])
            send(b'{"id": 7, "op": "delete_everything"}\\n')
            print(answer()["error"])
            send(b"\\xff\\xfe\\n")
            print(answer()["kind"])
            send(b"[" * 10000 + b"\\n")
            print(answer()["kind"])
            print(call_tool("t.echo", {"still": "works"}))
            for n in range(100):
                send(b"{{{\\n")
                last = answer()
                if last is None or last["kind"] == "closed":
                    break
            print(n, last and last["kind"])
            try:
                call_tool("t.echo", {})
            except ToolError as error:
                print(type(error).__name__)
            """
        ),
        CALLER,
    )
    assert run.ok, run.result.stderr
    lines = run.result.stdout.splitlines()
    assert lines[0].startswith(
        "{'id': None, 'ok': False, 'kind': 'malformed', 'error': 'a request is not a JSON line"
    )
    assert lines[1] == 'a request must be a JSON object {"id", "op", ...}'
    assert lines[2] == "unknown op 'delete_everything': one of call, find, list, start, result"
    assert lines[3:5] == ["malformed", "malformed"]
    assert lines[5] == "{'still': 'works'}"
    assert lines[6] == f"{MAX_BAD_LINES - 5} closed"  # five bad lines came before the loop
    assert lines[7] == "ChannelClosed"
    assert bench.calls == [("t.echo", "sandbox")]


async def test_a_huge_request_is_refused_and_the_channel_keeps_working(
    mode: CodeMode, bench: ToolBench
) -> None:
    run = await mode.run(
        RAW
        + code(
            """
            try:
                call_tool("t.echo", {"blob": "x" * 100000})
            except ToolError as error:
                print(error.kind, error)
            send(b'{"id": 99, "op": "call", "name": "t.echo", "arguments": {"blob": "' + b"y" * 3000000)
            send(b'"}}\\n')
            print(answer()["kind"])
            print(call_tool("t.echo", {"small": 1}))
            """
        ),
        CALLER,
    )
    assert run.ok, run.result.stderr
    lines = run.result.stdout.splitlines()
    assert lines[0].startswith("limit a request is larger than 16384 bytes"), lines
    assert "sandbox_request_bytes" in lines[0]
    assert lines[1:] == ["limit", "{'small': 1}"]
    assert bench.calls == [("t.echo", "sandbox")]  # neither huge request reached a tool


async def test_an_answer_over_the_bound_is_refused_naming_the_setting(
    mode: CodeMode, bench: ToolBench
) -> None:
    run = await mode.run(
        code(
            """
            print(len(tools.t.big(bytes=1000)))
            try:
                tools.t.big(bytes=200000)
            except ToolError as error:
                print(error.kind, error)
            """
        ),
        CALLER,
    )
    assert run.ok, run.result.stderr
    lines = run.result.stdout.splitlines()
    assert lines[0] == "1000"
    assert lines[1].startswith("limit the result of t.big is 2000"), lines[1]
    assert "sandbox_answer_bytes" in lines[1]


async def test_the_channel_is_no_way_to_host_loopback(
    mode: CodeMode, loopback_listener: socket.socket
) -> None:
    port = loopback_listener.getsockname()[1]
    run = await mode.run(
        code(
            f"""
            import errno, socket
            for attempt in ("channel", "fresh", "unix"):
                try:
                    if attempt == "channel":
                        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 0, 3)  # the channel, as TCP
                        s.connect(("127.0.0.1", {port}))
                    elif attempt == "fresh":
                        socket.create_connection(("127.0.0.1", {port}), timeout=1)
                    else:
                        u = socket.socket(socket.AF_UNIX)
                        u.connect("\\0nexus-host-socket")
                    print(attempt, "ESCAPED")
                except OSError as error:
                    print(attempt, "blocked", errno.errorcode.get(error.errno, error.errno))
            """
        ),
        CALLER,
    )
    assert "ESCAPED" not in run.result.stdout, run.result.stdout + run.result.stderr
    assert [line.split()[:2] for line in run.result.stdout.splitlines()] == [
        ["channel", "blocked"],
        ["fresh", "blocked"],
        ["unix", "blocked"],
    ], run.result.stderr
    with pytest.raises(BlockingIOError):
        loopback_listener.accept()


async def test_python_sandbox_is_refused_from_code_however_it_is_named(
    mode: CodeMode, bench: ToolBench
) -> None:
    run = await mode.run(
        code(
            """
            for name, arguments in (
                ("python_sandbox", {"code": "print(1)"}),
                ("call_tool", {"name": "python_sandbox", "arguments": {"code": "print(1)"}}),
            ):
                try:
                    call_tool(name, arguments)
                    print("ESCAPED")
                except ToolError as error:
                    print(error.kind, error)
            print(sorted(dir(tools.t)))
            """
        ),
        CALLER,
    )
    assert run.ok, run.result.stderr
    lines = run.result.stdout.splitlines()
    assert (
        lines[:2]
        == [
            "refused python_sandbox cannot be called from code running in python_sandbox: do the work in this code instead"
        ]
        * 2
    )
    assert lines[2] == "['big', 'boom', 'echo', 'runs_code']"  # no stub for python_sandbox
    assert bench.calls == []


async def test_a_tool_that_runs_code_is_refused_inside_a_run(mode: CodeMode, bench: ToolBench) -> None:
    run = await mode.run(
        code(
            """
            try:
                tools.t.runs_code()
            except ToolError as error:
                print(error)
            """
        ),
        CALLER,
    )
    assert run.ok, run.result.stderr
    assert "cannot start another python_sandbox run" in run.result.stdout, run.result.stdout
    # Outside a run the same tool runs its code: the refusal is the nesting, not the tool.
    assert (await bench.call("t.runs_code", {}, CALLER)).content[0].text == "ran code inside code"  # type: ignore[union-attr]


async def test_a_gateway_bug_behind_one_request_leaves_the_channel_working(mode: CodeMode) -> None:
    run = await mode.run(
        code(
            """
            try:
                tools.t.boom()
            except ToolError as error:
                print(error.kind, error)
            print(tools.t.echo(after="boom"))
            """
        ),
        CALLER,
    )
    assert run.result.stdout.splitlines() == [
        "internal RuntimeError: a bug behind the tool",
        "{'after': 'boom'}",
    ]


async def test_the_channel_is_the_only_descriptor_added(mode: CodeMode) -> None:
    run = await mode.run(
        code(
            """
            import os, stat
            print(sorted(int(fd) for fd in os.listdir('/proc/self/fd')))
            print(stat.S_ISSOCK(os.fstat(3).st_mode))
            """
        ),
        CALLER,
    )
    # 0-2 are the pipes, 3 the channel (a socket), 4 listdir's own descriptor.
    assert run.result.stdout.splitlines() == ["[0, 1, 2, 3, 4]", "True"]
