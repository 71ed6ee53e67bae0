"""Normal use of the sandbox: data loading, answers on stdout, caps, timeouts, errors, cancellation."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from mcp_nexus.sandbox import BwrapBackend, ResourceLimits, Sandbox, SandboxRequest
from mcp_nexus.upstream import child_process

from .conftest import TEST_TIMEOUT_S, run_code, sandbox_namespace_pids, wait_for_no_new_sandbox_processes

REPO = Path(__file__).resolve().parents[2]


def make_devices(count: int) -> list[dict[str, object]]:
    kinds = ("light", "switch", "sensor", "climate")
    return [
        {
            "id": f"{kinds[i % 4]}.room_{i}",
            "state": "on" if i % 3 else "off",
            "attributes": {"n": i, "x": "y" * 40},
        }
        for i in range(count)
    ]


async def test_filters_a_1_mb_json_file_with_a_list_comprehension(sandbox: Sandbox, data_dir: Path) -> None:
    devices = make_devices(9000)
    payload = json.dumps(devices)
    assert len(payload) > 1_000_000
    (data_dir / "tool_output_big.json").write_text(payload)
    code = "print(json.dumps([x['id'] for x in data if 'light' in x['id'] and x['state'] == 'on']))"
    result = await run_code(sandbox, code, files=["tool_output_big.json"])
    assert result.ok, result.stderr
    assert result.sandboxed and result.backend == "bubblewrap"
    expected = [d["id"] for d in devices if "light" in str(d["id"]) and d["state"] == "on"]
    assert json.loads(result.stdout) == expected


async def test_several_files_arrive_as_a_dict_and_under_data(sandbox: Sandbox, data_dir: Path) -> None:
    (data_dir / "notes.txt").write_text("not json\nsecond line")
    code = textwrap.dedent(
        """
        print(sorted(data), data is files)
        print(data["notes.txt"].splitlines()[1])
        print(open(DATA_DIR + "/devices.json").read() == json.dumps(files["devices.json"]))
        """
    )
    result = await run_code(sandbox, code, files=["devices.json", "notes.txt"])
    assert result.ok, result.stderr
    assert result.stdout.splitlines() == ["['devices.json', 'notes.txt'] True", "second line", "True"]


async def test_no_files_means_data_is_none(sandbox: Sandbox) -> None:
    result = await run_code(sandbox, "print(data, files)")
    assert result.stdout.strip() == "None {}"


async def test_each_call_gets_a_fresh_tmp(sandbox: Sandbox) -> None:
    first = await run_code(
        sandbox, "import os\nopen('/tmp/left-over', 'w').write('x')\nprint(os.listdir('/tmp'))"
    )
    second = await run_code(sandbox, "import os\nprint(os.listdir('/tmp'))")
    assert first.stdout.strip() == "['left-over']"
    assert second.stdout.strip() == "[]"


async def test_exception_in_user_code_is_reported_on_stderr(sandbox: Sandbox) -> None:
    result = await run_code(sandbox, "print('partial')\nraise KeyError('light.x')")
    assert result.exit_code == 1 and not result.ok
    assert result.stdout == "partial\n"
    assert "KeyError: 'light.x'" in result.stderr
    assert 'File "<python_sandbox>", line 2' in result.stderr
    assert "bootstrap" not in result.stderr


async def test_syntax_error_is_reported(sandbox: Sandbox) -> None:
    result = await run_code(sandbox, "print(")
    assert result.exit_code == 1
    assert "SyntaxError" in result.stderr


async def test_output_over_the_cap_is_truncated(data_dir: Path, bwrap_backend: BwrapBackend) -> None:
    box = Sandbox(data_dir, backends=[bwrap_backend], output_cap_bytes=1000, timeout_s=TEST_TIMEOUT_S)
    result = await run_code(box, "print('x' * 200_000)")
    assert result.truncated and not result.timed_out
    assert result.stdout == "x" * 1000


async def test_endless_output_is_killed_at_the_cap_not_the_timeout(
    data_dir: Path, bwrap_backend: BwrapBackend
) -> None:
    box = Sandbox(data_dir, backends=[bwrap_backend], output_cap_bytes=4096, timeout_s=10.0)
    result = await run_code(box, "while True:\n    print('y' * 100)")
    assert result.truncated and not result.timed_out
    assert len(result.stdout.encode()) <= 4096
    assert result.duration_s < 5


async def test_cap_does_not_split_a_utf8_character(data_dir: Path, bwrap_backend: BwrapBackend) -> None:
    box = Sandbox(data_dir, backends=[bwrap_backend], output_cap_bytes=1001, timeout_s=TEST_TIMEOUT_S)
    result = await run_code(box, "print('é' * 1000)")
    assert result.truncated
    assert result.stdout == "é" * 500


async def test_stderr_is_capped_too(data_dir: Path, bwrap_backend: BwrapBackend) -> None:
    box = Sandbox(data_dir, backends=[bwrap_backend], output_cap_bytes=2048, timeout_s=10.0)
    result = await run_code(box, "import sys\nwhile True:\n    sys.stderr.write('e' * 100)")
    assert result.truncated and len(result.stderr) <= 2048 and result.duration_s < 5


async def test_timeout_returns_a_timed_out_result(sandbox: Sandbox) -> None:
    result = await run_code(
        sandbox, "import time\nprint('started', flush=True)\ntime.sleep(60)", timeout_s=1.0
    )
    assert result.timed_out
    assert result.stdout == "started\n"
    assert result.duration_s < 3


async def test_cancelling_the_call_kills_and_reaps_the_sandbox(sandbox: Sandbox) -> None:
    before = sandbox_namespace_pids()
    task = asyncio.create_task(run_code(sandbox, "while True:\n    pass", timeout_s=30))
    await asyncio.sleep(0.5)
    assert sandbox_namespace_pids() - before, "the sandbox should be running"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not wait_for_no_new_sandbox_processes(before)
    # bwrap itself was reaped: this process has no children left (but the gateway's orphan
    # watchdog, when an earlier test of this process started stdio servers).
    watchdog = child_process.watchdog_pid()
    children = [
        p for p in os.listdir("/proc") if p.isdigit() and _parent(p) == os.getpid() and int(p) != watchdog
    ]
    assert children == []


def _parent(pid: str) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError):
        return -1


async def test_concurrent_calls_all_complete(sandbox: Sandbox) -> None:
    results = await asyncio.gather(*(run_code(sandbox, f"print({i} * 2)") for i in range(5)))
    assert [r.stdout.strip() for r in results] == [str(i * 2) for i in range(5)]


async def test_data_holds_the_named_files_only_and_is_the_working_folder(
    sandbox: Sandbox, data_dir: Path
) -> None:
    """Other files of the folder (other callers' offloads) are not there; a bare name opens as written."""
    (data_dir / "someone_elses.json").write_text('{"secret": 1}')
    code = (
        "import os, json\nprint(os.getcwd(), sorted(os.listdir('.')), len(json.load(open('devices.json'))))"
    )
    result = await run_code(sandbox, code, files=["devices.json"])
    assert result.ok, result.stderr
    assert result.stdout.strip() == "/data ['devices.json'] 2"
    result = await run_code(sandbox, "import os\nprint(os.listdir('/data'))")
    assert result.ok and result.stdout.strip() == "[]"


def test_works_when_the_gateway_is_not_root() -> None:
    """As a normal user bwrap maps that user into the sandbox and bind-mounts each named file
    (only those: the folder holds other callers' offloads too), read-only, in /data, the
    code's working folder.

    Run as root, this drops to uid 65534 for the gateway itself; run as a normal user, it
    runs as that user: either way it exercises the non-root path.
    """
    data = Path(tempfile.mkdtemp(prefix="nexus-sandbox-nonroot-"))
    try:
        (data / "a.json").write_text("[1, 2, 3]")
        (data / "b.json").write_text("{}")
        for path in (data, data / "a.json", data / "b.json"):
            if os.geteuid() == 0:
                os.chown(path, 65534, 65534)
        script = textwrap.dedent(
            f"""
            import asyncio, json
            from pathlib import Path
            from mcp_nexus.sandbox import Sandbox, SandboxRequest
            CODE = '''
            import os
            try:
                open("/data/c.json", "w")
                wrote = True
            except OSError:
                wrote = False
            mounts = open("/proc/self/mountinfo").read()
            print(json.dumps({{"sum": sum(data), "listing": sorted(os.listdir("/data")), "wrote": wrote,
                              "mounts": mounts, "cwd": os.getcwd(), "relative": json.load(open("a.json"))}}))
            '''
            async def main():
                box = Sandbox(Path({str(data)!r}), timeout_s=5)
                result = await box.run(SandboxRequest(CODE, ["a.json"]))
                print(result.stdout, end="")
            asyncio.run(main())
            """
        )
        as_root = os.geteuid() == 0
        # The venv's interpreter may live under /root; the system one can import the source tree.
        python = "/usr/bin/python3" if as_root else sys.executable
        completed = subprocess.run(
            [python, "-c", script],
            capture_output=True,
            text=True,
            timeout=30,
            cwd="/",
            check=False,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO / "src")},
            user=65534 if as_root else None,
            group=65534 if as_root else None,
            extra_groups=[] if as_root else None,
        )
        assert completed.returncode == 0, completed.stderr
        # The file is bind-mounted here: the masked mount table must not give its host path away.
        assert json.loads(completed.stdout) == {
            "sum": 6,
            "listing": ["a.json"],
            "wrote": False,
            "mounts": "",
            "cwd": "/data",
            "relative": [1, 2, 3],
        }
        assert sorted(p.name for p in data.iterdir()) == ["a.json", "b.json"]
    finally:
        for path in data.iterdir():
            path.unlink()
        data.rmdir()


def test_default_limits_are_sane() -> None:
    limits = ResourceLimits()
    assert limits.extra_processes == 0 and limits.memory_bytes >= 256 * 1024 * 1024
    with pytest.raises(ValueError, match="memory_bytes"):
        ResourceLimits(memory_bytes=0)


async def test_request_dataclasses_are_frozen() -> None:
    request = SandboxRequest("print(1)")
    with pytest.raises(AttributeError):
        request.code = "x"  # type: ignore[misc]
