"""A stdio server's stderr pipe belongs to that server alone, on the loop the gateway runs (uvloop).

uvloop spawns through libuv, which does not close a parent's inheritable descriptors in the
child (subprocess's `close_fds` does). The stderr pipe's write end used to be made inheritable,
so every server spawned while another's pipe was open kept a copy of it: the first server's
stderr never reached end-of-file while its sibling lived (its crash was reported without its
last words, which wait for that end-of-file), and the sibling could write into its log.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from mcp_nexus import event_loop
from mcp_nexus.upstream import child_process
from mcp_nexus.upstream.stderr_log import StderrForwarder

# Waits for one line on stdin, says its last words on stderr, exits with code 3.
DYING = "import sys; sys.stdin.readline(); sys.stderr.write('fatal: out of cheese\\n'); sys.exit(3)"
# Lives until its stdin closes.
SIBLING = "import sys; sys.stdin.read()"


def _pipes_of(pid: int) -> set[str]:
    pipes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("pipe:"):
            pipes.add(target)
    return pipes


async def _scenario() -> None:
    forwarder = StderrForwarder("dying")
    write_end = f"pipe:[{os.fstat(forwarder.writer.fileno()).st_ino}]"
    sibling_err = StderrForwarder("sibling")
    # The sibling starts while the dying server's pipe is open in the gateway (two servers
    # starting side by side do exactly this).
    sibling = await child_process.spawn(
        [sys.executable, "-c", SIBLING], env=None, cwd=None, stderr=sibling_err.writer
    )
    sibling_err.close_parent_end()
    dying = await child_process.spawn(
        [sys.executable, "-c", DYING], env=None, cwd=None, stderr=forwarder.writer
    )
    forwarder.close_parent_end()
    try:
        assert write_end not in _pipes_of(sibling.pid), "the sibling holds the other server's stderr pipe"
        assert dying.stdin is not None
        dying.stdin.write(b"now\n")
        assert await asyncio.wait_for(dying.wait(), 10) == 3
        # End-of-file arrives although the sibling still runs, and the last words are read.
        assert await forwarder.wait_drained(5.0), "the dead server's stderr never reached end-of-file"
        assert forwarder.last_words() == "fatal: out of cheese"
    finally:
        await child_process.terminate(dying)
        await child_process.terminate(sibling)
        await sibling_err.wait_drained(5.0)


def test_a_siblings_spawn_keeps_no_copy_of_another_servers_stderr_pipe() -> None:
    assert event_loop.loop_factory() is not None, "uvloop is a dependency on Linux: the gateway's loop"
    event_loop.run(_scenario())
