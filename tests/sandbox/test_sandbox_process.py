"""The bounded process runner shared by every backend."""

from __future__ import annotations

import os
import sys
import textwrap

from mcp_nexus.sandbox.process import decode_capped, run_bounded_process


def test_decode_capped_drops_only_a_cut_character() -> None:
    assert decode_capped("aé".encode()[:-1]) == "a"
    assert decode_capped("a€".encode()[:-1]) == "a"
    assert decode_capped("a😀".encode()[:-2]) == "a"
    assert decode_capped("aé".encode()) == "aé"
    assert decode_capped(b"") == ""


async def test_a_detached_child_holding_the_pipes_does_not_hang_the_call() -> None:
    # Outside bubblewrap a setsid grandchild escapes the process group and keeps stdout open;
    # the runner must still return promptly once the child itself has exited.
    code = textwrap.dedent(
        """
        import os, sys, time
        if os.fork() == 0:
            os.setsid()
            time.sleep(3)
            os._exit(0)
        print("parent done", flush=True)
        """
    )
    outcome = await run_bounded_process(
        [sys.executable, "-c", code], stdin_data=b"", timeout_s=10, output_cap_bytes=1024
    )
    assert outcome.stdout == b"parent done\n"
    assert outcome.exit_code == 0 and not outcome.timed_out
    assert outcome.duration_s < 2.5


async def test_stdin_is_delivered_and_the_environment_is_replaced() -> None:
    code = "import os, sys; print(sys.stdin.read().upper(), sorted(os.environ))"
    outcome = await run_bounded_process(
        [sys.executable, "-c", code],
        stdin_data=b"hello",
        timeout_s=10,
        output_cap_bytes=1024,
        env={"ONLY": "1"},
    )
    text = outcome.stdout.decode()
    assert text.startswith("HELLO ")
    assert "'ONLY'" in text and "'PATH'" not in text and "'HOME'" not in text


async def test_the_child_runs_in_its_own_process_group() -> None:
    outcome = await run_bounded_process(
        [sys.executable, "-c", "import os; print(os.getpgid(0) == os.getpid())"],
        stdin_data=b"",
        timeout_s=10,
        output_cap_bytes=1024,
    )
    assert outcome.stdout == b"True\n"
    assert os.getpgid(0) != 0
