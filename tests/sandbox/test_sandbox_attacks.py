"""The attack suite: every attack runs in a real bubblewrap sandbox and must be blocked.

Each attack prints "blocked ..." when the kernel refused it and "ESCAPED" when it got
through; the tests also check the host side (files, listeners, processes) directly.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_nexus.sandbox import BwrapBackend, ResourceLimits, Sandbox

from .conftest import TEST_TIMEOUT_S, run_code, snapshot

pytestmark = pytest.mark.usefixtures("no_leftover_processes")


def attempt(body: str) -> str:
    """Wrap an attack so an OSError prints "blocked <errno name>" and success prints ESCAPED."""
    return textwrap.dedent(
        """
        import errno, os
        try:
        {body}
            print("ESCAPED")
        except OSError as error:
            print("blocked", errno.errorcode.get(error.errno, error.errno))
        """
    ).format(body=textwrap.indent(textwrap.dedent(body).strip(), "    "))


def assert_blocked(stdout: str, expected: str | None = None) -> None:
    assert "ESCAPED" not in stdout
    assert stdout.startswith("blocked"), stdout
    if expected:
        assert expected in stdout, stdout


@pytest.fixture
def loopback_listener() -> Iterator[socket.socket]:
    """A real TCP listener on host 127.0.0.1 that the sandbox must never reach."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    yield listener
    listener.close()


def assert_never_connected(listener: socket.socket) -> None:
    with pytest.raises(BlockingIOError):
        listener.accept()


# --- network -----------------------------------------------------------------------------------


async def test_internet_is_unreachable(sandbox: Sandbox) -> None:
    code = attempt(
        """
        s = __import__("socket").create_connection(("1.1.1.1", 53), timeout=2)
        """
    )
    result = await run_code(sandbox, code)
    assert_blocked(result.stdout, "ENETUNREACH")


async def test_only_an_isolated_loopback_interface_exists(sandbox: Sandbox) -> None:
    result = await run_code(sandbox, "import socket; print([name for _, name in socket.if_nameindex()])")
    assert result.stdout.strip() == "['lo']"


async def test_dns_does_not_resolve(sandbox: Sandbox) -> None:
    code = 'import socket\ntry:\n    socket.getaddrinfo("example.com", 443)\n    print("ESCAPED")\nexcept OSError:\n    print("blocked")'
    result = await run_code(sandbox, code)
    assert_blocked(result.stdout)


async def test_host_loopback_is_unreachable(sandbox: Sandbox, loopback_listener: socket.socket) -> None:
    port = loopback_listener.getsockname()[1]
    code = attempt(f'__import__("socket").create_connection(("127.0.0.1", {port}), timeout=2)')
    result = await run_code(sandbox, code)
    assert_blocked(result.stdout, "ECONNREFUSED")
    assert_never_connected(loopback_listener)


async def test_host_abstract_unix_socket_is_unreachable(sandbox: Sandbox) -> None:
    name = f"\0nexus-sandbox-test-{secrets.token_hex(6)}"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(name)
    listener.listen(1)
    listener.setblocking(False)
    try:
        code = attempt(
            f"""
            s = __import__("socket").socket(__import__("socket").AF_UNIX)
            s.connect({name!r})
            """
        )
        result = await run_code(sandbox, code)
        assert_blocked(result.stdout, "ECONNREFUSED")
        assert_never_connected(listener)
    finally:
        listener.close()


# --- reading the host --------------------------------------------------------------------------


async def test_etc_shadow_is_not_readable(sandbox: Sandbox) -> None:
    assert Path("/etc/shadow").exists()
    result = await run_code(sandbox, attempt('print(open("/etc/shadow").read())'))
    assert_blocked(result.stdout, "ENOENT")


async def test_root_home_is_not_readable(sandbox: Sandbox) -> None:
    assert Path("/root").exists()
    result = await run_code(sandbox, attempt('print(os.listdir("/root"))'))
    assert_blocked(result.stdout, "ENOENT")


async def test_secret_file_outside_the_data_folder_is_not_readable(sandbox: Sandbox, data_dir: Path) -> None:
    token = secrets.token_hex(16)
    secret = data_dir.parent / "secret.txt"
    secret.write_text(token)
    secret.chmod(0o644)  # readable by anyone who can see it: only invisibility protects it
    for path in (str(secret), "/data/../secret.txt", f"/proc/1/root{secret}", f"/proc/self/cwd/../{secret}"):
        result = await run_code(sandbox, attempt(f"print(open({path!r}).read())"))
        assert token not in result.stdout
        assert_blocked(result.stdout)


async def test_no_host_file_descriptor_reaches_the_code(sandbox: Sandbox) -> None:
    code = "import os\nprint(sorted(int(fd) for fd in os.listdir('/proc/self/fd')))"
    result = await run_code(sandbox, code, files=["devices.json"])
    # 0-2 are the pipes; the last one is listdir's own descriptor.
    assert result.stdout.strip() == "[0, 1, 2, 3]"


async def test_code_runs_without_privileges(sandbox: Sandbox) -> None:
    code = textwrap.dedent(
        """
        import os
        status = dict(line.split(":", 1) for line in open("/proc/self/status"))
        print(os.getuid(), os.getgid(), status["CapEff"].strip(), status["CapBnd"].strip(),
              status["NoNewPrivs"].strip())
        """
    )
    result = await run_code(sandbox, code)
    assert result.stdout.split() == ["65534", "65534", "0000000000000000", "0000000000000000", "1"]


async def test_new_user_namespaces_are_refused(sandbox: Sandbox) -> None:
    code = textwrap.dedent(
        """
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        CLONE_NEWUSER = 0x10000000
        if libc.unshare(CLONE_NEWUSER) == 0:
            print("ESCAPED")
        else:
            print("blocked", os.strerror(ctypes.get_errno()))
        """
    )
    result = await run_code(sandbox, code)
    assert_blocked(result.stdout)


# --- what /proc tells about the host -----------------------------------------------------------

MOUNT_VIEWS = (
    "/proc/self/mountinfo",
    "/proc/self/mounts",
    "/proc/mounts",
    "/proc/self/mountstats",
    "/proc/thread-self/mountinfo",
    "/proc/thread-self/mounts",
    "/proc/1/mountinfo",
    "/proc/partitions",
    "/proc/diskstats",
    "/proc/swaps",
)


def host_disk_of(mount_point: str) -> str:
    """The source (e.g. /dev/vda1) of the host mount that holds `mount_point`."""
    best = ("", "")
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields, _, tail = line.partition(" - ")
        where = fields.split()[4]
        inside = mount_point == where or mount_point.startswith(where.rstrip("/") + "/")
        if inside and len(where) >= len(best[0]):
            best = (where, tail.split()[1])
    return best[1]


async def test_mount_table_and_disk_lists_are_masked(sandbox: Sandbox, data_dir: Path) -> None:
    disk = host_disk_of("/usr")
    assert disk  # the sandbox bind-mounts /usr from this host disk
    code = textwrap.dedent(
        f"""
        import json
        seen = {{}}
        for path in {MOUNT_VIEWS!r}:
            try:
                seen[path] = open(path).read()
            except OSError as error:
                seen[path] = "error " + str(error.errno)
        print(json.dumps(seen))
        """
    )
    result = await run_code(sandbox, code, files=["devices.json"])
    # Readable and empty: programs that parse them find no mounts, and no error to trip on.
    assert json.loads(result.stdout) == dict.fromkeys(MOUNT_VIEWS, ""), result.stdout
    assert disk not in result.stdout and str(data_dir) not in result.stdout


async def test_code_is_pid_1_and_its_leftovers_die_with_it(sandbox: Sandbox) -> None:
    result = await run_code(
        sandbox, "import os\nprint(os.getpid(), sorted(p for p in os.listdir('/proc') if p.isdigit()))"
    )
    assert result.stdout.strip() == "1 ['1']"


# --- writing -----------------------------------------------------------------------------------


async def test_data_folder_cannot_be_changed(sandbox: Sandbox, data_dir: Path) -> None:
    before = snapshot(data_dir)
    attacks = [
        'open("/data/devices.json", "w").write("[]")',
        'open("/data/new.json", "w").write("{}")',
        'os.remove("/data/devices.json")',
        'os.chmod("/data/devices.json", 0o777)',
        'os.mkdir("/data/sub")',
    ]
    for attack in attacks:
        result = await run_code(sandbox, attempt(attack), files=["devices.json"])
        assert_blocked(result.stdout, "EROFS")
    assert snapshot(data_dir) == before


async def test_nothing_outside_the_data_folder_can_be_written(sandbox: Sandbox, data_dir: Path) -> None:
    outside = data_dir.parent / "outside.txt"
    for path in (str(outside), "/usr/evil", "/evil", "/dev/evil", "/proc/evil"):
        result = await run_code(sandbox, attempt(f"open({path!r}, 'w').write('pwned')"))
        assert_blocked(result.stdout)
    assert not outside.exists()
    assert not Path("/usr/evil").exists()
    assert not Path("/evil").exists()


# --- resources ---------------------------------------------------------------------------------


async def test_8_gib_allocation_fails(sandbox: Sandbox) -> None:
    code = "try:\n    b = bytearray(8 * 1024**3)\n    print('ESCAPED')\nexcept MemoryError:\n    print('blocked')"
    result = await run_code(sandbox, code)
    assert result.stdout.strip() == "blocked"


async def test_growing_memory_stops_at_the_limit(sandbox: Sandbox, limits: ResourceLimits) -> None:
    code = textwrap.dedent(
        """
        chunks = []
        try:
            while True:
                chunks.append(bytearray(8 * 1024 * 1024))
        except MemoryError:
            held = len(chunks) * 8 * 1024 * 1024
            chunks.clear()
            print("blocked", held)
        """
    )
    result = await run_code(sandbox, code)
    verdict, held = result.stdout.split()
    assert verdict == "blocked"
    assert int(held) < limits.memory_bytes


async def test_disk_fill_of_tmp_stops_at_its_size(sandbox: Sandbox, limits: ResourceLimits) -> None:
    code = textwrap.dedent(
        """
        import errno
        written = 0
        try:
            for index in range(1000):
                with open(f"/tmp/fill{index}", "wb") as handle:
                    for _ in range(4):
                        handle.write(b"x" * (1 << 20))
                        handle.flush()
                        written += 1 << 20
            print("ESCAPED")
        except OSError as error:
            print("blocked", errno.errorcode[error.errno], written)
        """
    )
    result = await run_code(sandbox, code)
    verdict, reason, written = result.stdout.split()
    assert (verdict, reason) == ("blocked", "ENOSPC")
    assert int(written) <= limits.tmp_bytes


async def test_one_huge_file_is_stopped_by_the_file_size_limit(data_dir: Path) -> None:
    backend = BwrapBackend(limits=ResourceLimits(file_size_bytes=1024 * 1024, tmp_bytes=8 * 1024 * 1024))
    box = Sandbox(data_dir, backends=[backend], timeout_s=TEST_TIMEOUT_S)
    code = attempt('open("/tmp/big", "wb").write(b"x" * (4 * 1024 * 1024))')
    result = await run_code(box, code)
    assert_blocked(result.stdout, "EFBIG")


async def test_infinite_loop_is_killed_at_the_timeout(sandbox: Sandbox) -> None:
    result = await run_code(sandbox, "while True:\n    pass", timeout_s=1.5)
    assert result.timed_out
    assert result.exit_code != 0
    assert 1.5 <= result.duration_s < 1.5 + 2.0


async def test_fork_bomb_cannot_fork_at_all(sandbox: Sandbox) -> None:
    result = await run_code(sandbox, "import os\nwhile True:\n    os.fork()")
    assert result.exit_code == 1
    assert "BlockingIOError" in result.stderr
    assert not result.timed_out


async def test_fork_bomb_with_a_process_allowance_is_contained(data_dir: Path) -> None:
    backend = BwrapBackend(limits=ResourceLimits(extra_processes=6))
    box = Sandbox(data_dir, backends=[backend], timeout_s=TEST_TIMEOUT_S)
    code = textwrap.dedent(
        """
        import os, time
        root = os.getpid()
        while True:
            try:
                os.fork()
            except OSError:
                break
        time.sleep(0.3)
        if os.getpid() == root:
            print(sum(len(os.listdir(f"/proc/{p}/task")) for p in os.listdir("/proc") if p.isdigit()))
        """
    )
    result = await run_code(box, code)
    assert not result.timed_out
    # bwrap's init + the code + at most 6 more.
    assert int(result.stdout.strip()) <= 2 + 6


async def test_setsid_child_does_not_outlive_the_call(data_dir: Path) -> None:
    backend = BwrapBackend(limits=ResourceLimits(extra_processes=4))
    box = Sandbox(data_dir, backends=[backend], timeout_s=10.0)
    marker = f"{secrets.randbelow(10_000) + 10_000}.25"
    code = textwrap.dedent(
        f"""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv("/usr/bin/sleep", ["sleep", "{marker}"])
            os._exit(0)
        os.wait()
        time.sleep(0.2)
        alive = [p for p in os.listdir("/proc") if p.isdigit()
                 and open(f"/proc/{{p}}/cmdline").read().startswith("sleep")]
        print("detached child running:", bool(alive))
        """
    )
    result = await run_code(box, code)
    assert result.stdout.strip() == "detached child running: True"
    # The call returned as soon as the code ended, not when the detached child would have.
    assert result.duration_s < 5
    survivors = [p for p in os.listdir("/proc") if p.isdigit() and marker in _cmdline(p)]
    assert survivors == []


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


async def test_spawning_a_subprocess_fails(sandbox: Sandbox) -> None:
    code = "import subprocess\nprint(subprocess.run(['/usr/bin/id'], capture_output=True).stdout)"
    result = await run_code(sandbox, code)
    assert "uid=" not in result.stdout
    assert result.exit_code == 1
    assert "BlockingIOError" in result.stderr


async def test_os_system_cannot_run_a_shell(sandbox: Sandbox) -> None:
    result = await run_code(sandbox, "import os\nprint('status', os.system('echo ESCAPED'))")
    assert "ESCAPED" not in result.stdout
    assert result.stdout.startswith("status") and result.stdout.split()[1] != "0"
