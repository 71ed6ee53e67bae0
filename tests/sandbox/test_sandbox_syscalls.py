"""The seccomp filter: every denied syscall fails inside a real sandbox, and the filter is why.

Each denied syscall is called (through ctypes' `syscall()`) with arguments the kernel itself
would answer with something other than EPERM: success, EFAULT for a bad pointer, EINVAL
for bad flags, EBADF for a bad descriptor. The same probe runs once in a sandbox without the
filter, so each test shows both answers: EPERM with the filter, the kernel's own answer
without it. A test therefore fails if the filter is removed or loses that syscall.

A few syscalls are refused by the kernel with EPERM before it looks at any argument, for
want of a capability the sandbox never has (`KERNEL_SAYS_EPERM_TOO`). For those, the
in-sandbox answer cannot tell the two layers apart; the compiled filter is checked instead
(test_the_compiled_filter_decides_every_listed_syscall runs the very BPF program bwrap gets).
"""

from __future__ import annotations

import errno
import json
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pyseccomp
import pytest

from mcp_nexus.sandbox import BwrapBackend, Sandbox, SandboxRequest, SandboxUnavailableError
from mcp_nexus.sandbox import seccomp as seccomp_module
from mcp_nexus.sandbox.seccomp import (
    AF_VSOCK,
    ALLOWED_SYSCALLS,
    DENIED_SYSCALLS,
    NAMESPACE_CLONE_FLAGS,
    SeccompUnavailableError,
    syscall_filter_program,
)

from .bpf import SECCOMP_RET_ALLOW, SECCOMP_RET_KILL_PROCESS, errno_action, run_filter, seccomp_data
from .conftest import run_code

pytestmark = pytest.mark.usefixtures("no_leftover_processes")

BAD_POINTER = 1  # never mapped: the kernel answers EFAULT when it reads through it
SELF = "PID"  # replaced by the probing process's pid


def text(value: str) -> dict[str, str]:
    return {"s": value}


# name -> arguments. Chosen so that, without the filter, the kernel answers anything but EPERM.
PROBES: dict[str, list[Any]] = {
    "ptrace": [16, 99999, 0, 0],  # PTRACE_ATTACH to a pid that does not exist: ESRCH
    "process_vm_readv": [SELF, 0, 0, 0, 0, 0],
    "process_vm_writev": [SELF, 0, 0, 0, 0, 0],
    "process_madvise": [-1, 0, 0, 0, 0],
    "pidfd_getfd": [-1, 0, 0],
    "kcmp": [SELF, SELF, 0, 0, 0],
    "add_key": [text("user"), text("nexus"), text("x"), 1, -2],  # into the process keyring
    "request_key": [text("user"), text("nexus-missing"), 0, 0],
    "keyctl": [0, -2, 0],  # KEYCTL_GET_KEYRING_ID of the process keyring
    "mount": [BAD_POINTER, text("/tmp"), BAD_POINTER, 0, 0],
    "umount2": [text("/tmp"), 0x100],
    "chroot": [BAD_POINTER],
    "fsconfig": [-1, 0, 0, 0, 0],
    "open_tree": [-1, BAD_POINTER, 0xFFFFFFFF],
    "mount_setattr": [-1, BAD_POINTER, 0xFFFFFFFF, 0, 0],
    "unshare": [0],  # a no-op for the kernel
    "setns": [-1, 0],
    "open_by_handle_at": [-1, 0, 0],
    "name_to_handle_at": [-1, BAD_POINTER, 0, 0, 0xFFFFFFFF],
    "bpf": [9999, 0, 4097],
    "perf_event_open": [0, 0, -1, -1, 0],
    "userfaultfd": [1 | 0o2000000],  # UFFD_USER_MODE_ONLY | O_CLOEXEC: allowed unprivileged
    "io_uring_setup": [0, 0],
    "io_uring_enter": [-1, 0, 0, 0, 0, 0],
    "io_uring_register": [-1, 0, 0, 0],
    "fanotify_mark": [-1, 0, 0, -1, 0],
    "lookup_dcookie": [0, 0, 0],
    "init_module": [0, 0, 0],
    "finit_module": [-1, 0, 0],
    "delete_module": [BAD_POINTER, 0],
    "kexec_load": [0, 0, 0, 0],
    "kexec_file_load": [-1, -1, 0, 0, 0],
    "iopl": [0],
    "ioperm": [0, 0, 0],
    "modify_ldt": [0, 0, 0],  # read the (empty) LDT
    "uselib": [BAD_POINTER],
    "_sysctl": [0],
    "nfsservctl": [0, 0, 0],
    "mbind": [0, 0, 0, 0, 0, 0],
    "set_mempolicy": [0, 0, 0],
    "migrate_pages": [SELF, 0, 0, 0],
    "move_pages": [0, 0, 0, 0, 0, 0],
    "quotactl": [0, 0, 0, 0],
    "quotactl_fd": [-1, 0, 0, 0],
    "settimeofday": [BAD_POINTER, 0],
    "clock_settime": [0, BAD_POINTER],
    "clock_adjtime": [0, BAD_POINTER],
    "adjtimex": [BAD_POINTER],
    "personality": [8],  # PER_LINUX32: changing the persona, not querying it
    # refused by the kernel too (no capability in the sandbox); see the module docstring
    "pivot_root": [BAD_POINTER, BAD_POINTER],
    "fsopen": [BAD_POINTER, 0],
    "fsmount": [-1, 0, 0],
    "fspick": [-1, BAD_POINTER, 0],
    "move_mount": [-1, BAD_POINTER, -1, BAD_POINTER, 0],
    "fanotify_init": [0xFFFFFFFF, 0],
    "syslog": [10, 0, 0],
    "swapon": [BAD_POINTER, 0],
    "swapoff": [BAD_POINTER],
    "reboot": [0, 0, 0, 0],
    "acct": [0],
    "sethostname": [BAD_POINTER, 5],
    "setdomainname": [BAD_POINTER, 5],
    "vhangup": [],
}
KERNEL_SAYS_EPERM_TOO = {
    "pivot_root",
    "fsopen",
    "fsmount",
    "fspick",
    "move_mount",
    "fanotify_init",
    "syslog",
    "swapon",
    "swapoff",
    "reboot",
    "acct",
    "sethostname",
    "setdomainname",
    "vhangup",
    # refused for want of a capability on a kernel with modules (ENOSYS on one without)
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
}
# Decided by their arguments rather than listed.
EXTRA_PROBES: dict[str, tuple[str, list[Any]]] = {
    "clone a user namespace": ("clone", [0x10000000 | 17, 0, 0, 0, 0]),  # CLONE_NEWUSER | SIGCHLD
    "clone a network namespace": ("clone", [0x40000000 | 17, 0, 0, 0, 0]),
    "socket(AF_VSOCK)": ("socket", [AF_VSOCK, 1, 0]),
    "clone3": ("clone3", [0, 0]),
    "personality query": ("personality", [0xFFFFFFFF]),
}

PROBE_CODE = textwrap.dedent(
    """
    import ctypes, errno, json, os
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    answers = {}
    for label, number, arguments in SPEC:
        converted = []
        for value in arguments:
            if value == "PID":
                converted.append(ctypes.c_long(os.getpid()))
            elif isinstance(value, dict):
                converted.append(ctypes.c_char_p(value["s"].encode()))
            else:
                converted.append(ctypes.c_long(value))
        ctypes.set_errno(0)
        result = libc.syscall(ctypes.c_long(number), *converted)
        answers[label] = "ok" if result >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
    print(json.dumps(answers))
    """
)


def native_number(name: str) -> int:
    return int(pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name))


def probe_spec() -> list[tuple[str, int, list[Any]]]:
    spec = [(name, native_number(name), args) for name, args in PROBES.items()]
    spec += [(label, native_number(name), args) for label, (name, args) in EXTRA_PROBES.items()]
    return [entry for entry in spec if entry[1] >= 0]  # skip syscalls this architecture lacks


_answers: dict[bool, dict[str, str]] = {}


async def answers(filtered: bool) -> dict[str, str]:
    """Every probe's answer in a real sandbox with (or, for the comparison, without) the filter."""
    if filtered not in _answers:
        with tempfile.TemporaryDirectory() as folder:
            box = Sandbox(Path(folder), backends=[BwrapBackend(syscall_filter=filtered)], timeout_s=10)
            code = f"SPEC = {json.dumps(probe_spec())}\n{PROBE_CODE}"
            result = await run_code(box, code)
        assert result.exit_code == 0 and not result.timed_out, result.stderr
        _answers[filtered] = json.loads(result.stdout)
    return _answers[filtered]


@pytest.mark.parametrize("name", sorted(PROBES))
async def test_denied_syscall_fails_with_eperm(name: str) -> None:
    if native_number(name) < 0:
        pytest.skip(f"{name} does not exist on this architecture")
    with_filter = (await answers(True))[name]
    without_filter = (await answers(False))[name]
    assert with_filter == "EPERM", f"{name}: {with_filter} with the filter"
    if name in KERNEL_SAYS_EPERM_TOO:
        assert without_filter in ("EPERM", "ENOSYS"), without_filter
    else:
        # The probe is meaningful: without the filter the kernel answers differently.
        assert without_filter != "EPERM", f"{name} gives EPERM even without the filter"


async def test_ptrace_and_add_key_of_the_report_are_refused() -> None:
    """The issue's reproduction: both succeeded in the sandbox before the filter."""
    code = textwrap.dedent(
        """
        import ctypes, errno
        libc = ctypes.CDLL(None, use_errno=True)
        for label, result in (
            ("ptrace", libc.ptrace(16, 1, 0, 0)),
            ("add_key", libc.syscall(NR_ADD_KEY, b"user", b"nexus", b"x", 1, -2)),
        ):
            print(label, "ok" if result >= 0 else errno.errorcode[ctypes.get_errno()])
        """
    ).replace("NR_ADD_KEY", str(native_number("add_key")))
    with tempfile.TemporaryDirectory() as folder:
        result = await run_code(Sandbox(Path(folder), backends=[BwrapBackend()]), code)
    assert result.stdout.split("\n")[:2] == ["ptrace EPERM", "add_key EPERM"], result.stderr


async def test_namespaces_vsock_and_clone3_are_refused_by_their_arguments() -> None:
    with_filter = await answers(True)
    without_filter = await answers(False)
    assert with_filter["clone a user namespace"] == "EPERM"
    assert with_filter["clone a network namespace"] == "EPERM"
    assert without_filter["clone a user namespace"] != "EPERM"  # ENOSPC: bwrap's own limit
    assert with_filter["socket(AF_VSOCK)"] == "EPERM"
    assert without_filter["socket(AF_VSOCK)"] != "EPERM"
    # clone3's flags cannot be inspected: ENOSYS sends glibc back to clone.
    assert with_filter["clone3"] == "ENOSYS" and without_filter["clone3"] != "ENOSYS"
    # Querying the persona stays allowed; changing it is refused (above).
    assert with_filter["personality query"] == "ok"


async def test_the_code_runs_under_the_filter(sandbox: Sandbox) -> None:
    code = (
        "status = dict(l.split(':', 1) for l in open('/proc/self/status'))\nprint(status['Seccomp'].strip())"
    )
    result = await run_code(sandbox, code)
    assert result.stdout.strip() == "2"  # SECCOMP_MODE_FILTER


async def test_everyday_python_works_under_the_filter(data_dir: Path) -> None:
    """The allow-list must not break what data code does: threads, sqlite, asyncio, files..."""
    from mcp_nexus.sandbox import ResourceLimits

    box = Sandbox(data_dir, backends=[BwrapBackend(limits=ResourceLimits(extra_processes=4))], timeout_s=10)
    code = textwrap.dedent(
        """
        import asyncio, datetime, hashlib, mmap, os, random, shutil, socket, sqlite3, tempfile
        import threading, time, uuid, zlib, subprocess
        done = []
        db = sqlite3.connect(":memory:")
        db.execute("create table t(x)"); db.execute("insert into t values (2)")
        done.append(db.execute("select sum(x) from t").fetchone()[0] == 2)
        folder = tempfile.mkdtemp(); path = os.path.join(folder, "a")
        open(path, "w").write("hi"); shutil.copy2(path, path + ".copy"); shutil.rmtree(folder)
        done.append(True)
        left, right = socket.socketpair(); left.send(b"x"); done.append(right.recv(1) == b"x")
        async def nap():
            await asyncio.sleep(0.01)
            return True
        done.append(asyncio.run(nap()))
        region = mmap.mmap(-1, 4096); region[:2] = b"ok"; done.append(region[:2] == b"ok")
        worker = threading.Thread(target=lambda: done.append(True)); worker.start(); worker.join()
        done.append(len(hashlib.sha256(zlib.compress(uuid.uuid4().bytes)).hexdigest()) == 64)
        done.append(random.SystemRandom().random() < 1 and datetime.datetime.now().year > 2000)
        done.append(subprocess.run(["/usr/bin/echo", "hi"], capture_output=True).stdout == b"hi\\n")
        time.sleep(0.01)
        print(len(done), all(done))
        """
    )
    result = await run_code(box, code)
    assert result.stdout.split() == ["9", "True"], result.stderr


def test_the_compiled_filter_decides_every_listed_syscall() -> None:
    program = syscall_filter_program()
    arch = int(pyseccomp.system_arch()) & 0xFFFFFFFF

    def action(name: str, *args: int) -> int:
        return run_filter(program, seccomp_data(native_number(name), arch, args))

    for name in DENIED_SYSCALLS:
        if native_number(name) >= 0:
            assert action(name) == errno_action(errno.EPERM), name
    for name in ALLOWED_SYSCALLS:
        if native_number(name) >= 0:
            assert action(name) == SECCOMP_RET_ALLOW, name
    # Not listed at all: ENOSYS, as if the kernel lacked it.
    assert action("landlock_create_ruleset") == errno_action(errno.ENOSYS)
    assert action("clone3") == errno_action(errno.ENOSYS)
    # Decided by arguments.
    assert action("clone", 0x003D0F00 | 17) == SECCOMP_RET_ALLOW  # the flags pthread_create uses
    for flag in NAMESPACE_CLONE_FLAGS:
        assert action("clone", flag | 17) == errno_action(errno.EPERM), hex(flag)
    assert action("personality", 0xFFFFFFFF) == SECCOMP_RET_ALLOW
    assert action("personality", 0) == errno_action(errno.EPERM)
    assert action("socket", 2, 1, 0) == SECCOMP_RET_ALLOW
    assert action("socket", AF_VSOCK, 1, 0) == errno_action(errno.EPERM)
    # Another ABI (32-bit x86 numbers on x86_64, say) is killed, not looked up.
    assert run_filter(program, seccomp_data(native_number("getpid"), 0x40000003)) == SECCOMP_RET_KILL_PROCESS
    if arch == 0xC000003E:  # x86_64: the x32 ABI's numbers are refused too
        assert run_filter(program, seccomp_data(0x40000000 | 39, arch)) == SECCOMP_RET_KILL_PROCESS


def test_the_filter_is_built_once_per_process() -> None:
    assert syscall_filter_program() is syscall_filter_program()


async def test_without_libseccomp_the_sandbox_refuses_to_run(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyseccomp", None)  # import fails
    monkeypatch.setitem(sys.modules, "seccomp", None)
    syscall_filter_program.cache_clear()
    try:
        with pytest.raises(SeccompUnavailableError, match="pyseccomp"):
            syscall_filter_program()
        box = Sandbox(data_dir, backends=[BwrapBackend()])
        with pytest.raises(SandboxUnavailableError) as caught:
            await box.run(SandboxRequest("print(1)"))
        message = str(caught.value)
        assert "syscall filter cannot be built" in message and "does not run without it" in message
    finally:
        syscall_filter_program.cache_clear()


async def test_a_missing_libseccomp_library_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_library() -> None:
        raise RuntimeError("Unable to find libseccomp")

    class Finder:
        """Makes `import pyseccomp` fail the way it does when libseccomp.so is absent."""

        def find_spec(self, name: str, *_: object) -> None:
            if name == "pyseccomp":
                no_library()

    monkeypatch.delitem(sys.modules, "pyseccomp", raising=False)
    monkeypatch.setattr(sys, "meta_path", [Finder(), *sys.meta_path])
    syscall_filter_program.cache_clear()
    try:
        with pytest.raises(SeccompUnavailableError, match=r"apt-get install libseccomp2"):
            seccomp_module.syscall_filter_program()
    finally:
        syscall_filter_program.cache_clear()
