"""The bubblewrap backend: Linux namespaces around the system Python (see REFERENCE.md §6).

The sandbox sees /usr read-only (plus the /lib, /bin... links the distro needs), a fresh
procfs and minimal /dev, a size-limited tmpfs /tmp that lives for one call, and the data
at /data read-only; no network (its own empty network namespace), no host processes, no
capabilities, no new user namespaces, rlimits set before the user's code runs, and a
seccomp syscall filter (seccomp.py) in force from the exec of the interpreter on.

The code runs as pid 1 of its pid namespace (`--as-pid-1`): when it ends, the kernel kills
whatever it left behind, and the host-describing /proc files (the mount table, which names
host disks and the data folder's host path, and the disk lists) can be masked for it with
an empty file. bwrap sets the sandbox up in that very process, so `/proc/1/...` is the
code's own view. Processes the code creates (only with `extra_processes`, 0 by default)
see their own, unmasked, mount table.

Privilege drop: the kernel does not apply RLIMIT_NPROC to host root, and bwrap started by
root keeps every capability unless told otherwise. So when the gateway runs as root, bwrap
itself is started as an unprivileged uid/gid (65534 by default) and uses an unprivileged
user namespace. That uid usually cannot traverse the gateway's 0700 data folder, so in that
case the named files are copied into /data (`--ro-bind-data` from file descriptors the
gateway opened); when the gateway runs as a normal user each named file is bind-mounted.
Either way /data holds the named files and nothing else of the folder (other callers'
offloads live there too), and it is the code's working folder, so the bare name from an
alert opens as written.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mcp_nexus.sandbox.errors import SandboxUnavailableError
from mcp_nexus.sandbox.launch import SYSTEM_PYTHON, bootstrap_argv
from mcp_nexus.sandbox.models import ProbeResult, ResourceLimits, SandboxRequest, SandboxResult
from mcp_nexus.sandbox.process import decode_capped, run_bounded_process
from mcp_nexus.sandbox.seccomp import SeccompUnavailableError, program_fd, syscall_filter_program

# Said by each python_sandbox call and once by the serve banner: how to get bubblewrap on the
# common distributions (pip cannot bring it: it is a system program).
NOT_INSTALLED = (
    "bubblewrap (bwrap) is not installed: install your distribution's bubblewrap package "
    "(Debian/Ubuntu: sudo apt-get install bubblewrap; Fedora: sudo dnf install bubblewrap; "
    "Arch: sudo pacman -S bubblewrap), then restart the gateway"
)
SANDBOX_DATA_DIR = "/data"
_UNPRIVILEGED_ID = 65534  # "nobody"/"nogroup" on Debian and most distros
_HOST_LINKS = ("/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")
_PROBE_TIMEOUT_S = 10.0
# What /proc tells about the host's storage: the mount table of the code's own process (and
# of its one thread: /proc/thread-self), and the kernel's disk and swap lists.
MASKED_PROC_FILES = (
    "/proc/1/mountinfo",
    "/proc/1/mounts",
    "/proc/1/mountstats",
    "/proc/1/task/1/mountinfo",
    "/proc/1/task/1/mounts",
    "/proc/partitions",
    "/proc/diskstats",
    "/proc/swaps",
)

# Runs inside the sandbox during the probe: it must print exactly "sandbox-ok".
_PROBE_CODE = """
import os, socket
problems = []
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
if int(status["CapEff"].strip(), 16) or int(status["CapBnd"].strip(), 16):
    problems.append("capabilities were not dropped")
if status.get("NoNewPrivs", "0").strip() != "1":
    problems.append("no_new_privs is not set")
if SECCOMP and status.get("Seccomp", "0").strip() != "2":
    problems.append("the syscall filter is not in force")
if os.getuid() == 0:
    problems.append("the code runs as uid 0")
probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    probe.connect(("192.0.2.1", 9))
    problems.append("a network route exists")
except OSError:
    pass
print("sandbox-ok" if not problems else "sandbox-weak: " + ", ".join(problems))
"""


@dataclass(frozen=True)
class BwrapFeatures:
    """Options that depend on the installed bubblewrap version (read from `bwrap --help`)."""

    disable_userns: bool  # 0.8+
    tmpfs_size: bool  # 0.7+: without it /tmp is left read-only rather than unbounded
    perms: bool  # 0.5+


class BwrapBackend:
    """python_sandbox backend built on bubblewrap."""

    name = "bubblewrap"

    def __init__(
        self,
        *,
        bwrap_path: str | None = None,
        python_path: str = SYSTEM_PYTHON,
        limits: ResourceLimits | None = None,
        unprivileged_uid: int = _UNPRIVILEGED_ID,
        unprivileged_gid: int = _UNPRIVILEGED_ID,
        syscall_filter: bool = True,
    ) -> None:
        """`syscall_filter=False` runs without the seccomp filter: only for the tests that prove
        the filter is what refuses each denied syscall. Nothing in the gateway turns it off."""
        self._bwrap_path = bwrap_path
        self.syscall_filter = syscall_filter
        self._python = python_path
        self.limits = limits or ResourceLimits()
        self._uid = unprivileged_uid
        self._gid = unprivileged_gid
        self._features: BwrapFeatures | None = None

    def installed(self) -> bool:
        """Whether the bwrap program is there (a PATH lookup: cheap, unlike `probe`)."""
        return self._find_bwrap() is not None

    def _find_bwrap(self) -> str | None:
        if self._bwrap_path is not None:
            return self._bwrap_path if os.access(self._bwrap_path, os.X_OK) else None
        return shutil.which("bwrap")

    async def _detect_features(self, bwrap: str) -> BwrapFeatures:
        if self._features is None:
            proc = await asyncio.create_subprocess_exec(
                bwrap, "--help", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
            )
            out, _ = await asyncio.wait_for(proc.communicate(), _PROBE_TIMEOUT_S)
            text = out.decode("utf-8", "replace")
            self._features = BwrapFeatures(
                disable_userns="--disable-userns" in text,
                tmpfs_size="--size" in text,
                perms="--perms" in text,
            )
        return self._features

    async def probe(self) -> ProbeResult:
        bwrap = self._find_bwrap()
        if bwrap is None:
            return ProbeResult(False, NOT_INSTALLED)
        if not self._python.startswith("/usr/"):
            return ProbeResult(False, f"the sandbox only sees /usr, so {self._python} cannot run inside it")
        if not os.access(self._python, os.X_OK):
            return ProbeResult(False, f"{self._python} is missing: apt-get install python3-minimal")
        try:
            await self._detect_features(bwrap)
        except (OSError, TimeoutError) as error:
            return ProbeResult(False, f"{bwrap} --help failed: {error}")
        if self.syscall_filter:
            try:
                syscall_filter_program()
            except SeccompUnavailableError as error:
                return ProbeResult(False, f"{error}; python_sandbox does not run without it")
        probe_code = f"SECCOMP = {self.syscall_filter!r}\n{_PROBE_CODE}"
        with tempfile.TemporaryDirectory(prefix="nexus-sandbox-probe-") as empty:
            try:
                result = await self.run(
                    SandboxRequest(code=probe_code),
                    data_dir=Path(empty),
                    timeout_s=_PROBE_TIMEOUT_S,
                    output_cap_bytes=16 * 1024,
                )
            except OSError as error:
                return ProbeResult(False, f"cannot start {bwrap}: {error}")
        answer = result.stdout.strip()
        if answer == "sandbox-ok":
            return ProbeResult(True, f"bubblewrap works ({result.duration_s * 1000:.0f} ms cold start)")
        if answer.startswith("sandbox-weak"):
            return ProbeResult(False, f"bubblewrap started but does not isolate: {answer}")
        detail = result.stderr.strip()[-600:] or f"exit code {result.exit_code}"
        if result.timed_out:
            detail = f"the probe did not finish within {_PROBE_TIMEOUT_S:.0f} s"
        who = f"uid {self._uid} (the gateway runs as root)" if os.geteuid() == 0 else "the gateway's user"
        return ProbeResult(
            False,
            f"bubblewrap cannot create its sandbox: {detail} (bwrap runs as {who} and needs "
            "unprivileged user namespaces, which the kernel (kernel.unprivileged_userns_clone), "
            "AppArmor (kernel.apparmor_restrict_unprivileged_userns) or a container's seccomp "
            "policy may forbid)",
        )

    def build_argv(
        self,
        bwrap: str,
        features: BwrapFeatures,
        data_args: list[str],
        files: list[str],
        timeout_s: float,
        seccomp_fd: int | None = None,
        channel_fd: int | None = None,
    ) -> list[str]:
        """The full bwrap command line (public for tests and for documentation)."""
        argv = [bwrap, "--unshare-all", "--unshare-user", "--uid", str(self._uid), "--gid", str(self._gid)]
        if features.disable_userns:
            argv.append("--disable-userns")
        argv += ["--hostname", "sandbox", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
        argv += ["--as-pid-1"]
        if seccomp_fd is not None:
            argv += ["--seccomp", str(seccomp_fd)]
        argv += ["--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/tmp"]
        argv += ["--setenv", "TMPDIR", "/tmp", "--setenv", "LANG", "C.UTF-8"]
        argv += ["--setenv", "PYTHONDONTWRITEBYTECODE", "1"]
        argv += ["--ro-bind", "/usr", "/usr"]
        for link in _HOST_LINKS:
            if os.path.islink(link):
                argv += ["--symlink", os.readlink(link), link]
            elif os.path.isdir(link):
                argv += ["--ro-bind", link, link]
        argv += ["--proc", "/proc", "--dev", "/dev"]
        for masked in MASKED_PROC_FILES:
            # /dev/null reads as empty. (A --ro-bind would mount it nodev: opening it would fail.)
            if masked.startswith("/proc/1/") or os.path.exists(masked):
                argv += ["--dev-bind", "/dev/null", masked]
        argv += ["--remount-ro", "/dev"]
        if features.tmpfs_size:
            argv += ["--size", str(self.limits.tmp_bytes), "--tmpfs", "/tmp"]
        else:
            argv += ["--dir", "/tmp"]
        argv += data_args
        # The root tmpfs (holding /data, /tmp mount points, links) becomes read-only last.
        argv += ["--remount-ro", "/", "--chdir", SANDBOX_DATA_DIR, "--"]
        argv += bootstrap_argv(
            self._python,
            data_dir=SANDBOX_DATA_DIR,
            files=files,
            limits=self.limits,
            timeout_s=timeout_s,
            channel_fd=channel_fd,
        )
        return argv

    def _data_mount(
        self, data_dir: Path, files: list[str], features: BwrapFeatures, drop_privileges: bool
    ) -> tuple[list[str], list[int]]:
        """bwrap arguments that put the named files at /data, and the file descriptors they use."""
        args = ["--dir", SANDBOX_DATA_DIR]
        if not drop_privileges:
            folder = os.path.realpath(data_dir)
            for name in files:
                args += ["--ro-bind", os.path.join(folder, name), f"{SANDBOX_DATA_DIR}/{name}"]
            return args, []
        opened: list[int] = []
        try:
            for name in files:
                # Opened here, as the gateway user; bwrap copies the content into the sandbox.
                fd = os.open(data_dir / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
                opened.append(fd)
                if features.perms:
                    args += ["--perms", "0444"]
                args += ["--ro-bind-data", str(fd), f"{SANDBOX_DATA_DIR}/{name}"]
        except OSError:
            for fd in opened:
                os.close(fd)
            raise
        return args, opened

    async def run(
        self, request: SandboxRequest, *, data_dir: Path, timeout_s: float, output_cap_bytes: int
    ) -> SandboxResult:
        bwrap = self._find_bwrap()
        if bwrap is None:
            raise SandboxUnavailableError({self.name: NOT_INSTALLED})
        features = await self._detect_features(bwrap)
        # Never runs without the filter when it is on: an unavailable libseccomp is an error.
        program = syscall_filter_program() if self.syscall_filter else None
        files = list(request.files or [])
        drop_privileges = os.geteuid() == 0
        data_args, opened = self._data_mount(data_dir, files, features, drop_privileges)
        seccomp_fd: int | None = None
        try:
            if program is not None:
                seccomp_fd = program_fd(program)
                opened.append(seccomp_fd)
            # The tool channel (code mode) is inherited through bwrap, which keeps descriptors it
            # was not told about; inside, bootstrap.py closes every other one.
            channel = [] if request.channel_fd is None else [request.channel_fd]
            outcome = await run_bounded_process(
                self.build_argv(bwrap, features, data_args, files, timeout_s, seccomp_fd, request.channel_fd),
                stdin_data=request.code.encode("utf-8"),
                timeout_s=timeout_s,
                output_cap_bytes=output_cap_bytes,
                pass_fds=[*opened, *channel],
                cwd="/",
                env={"PATH": "/usr/bin:/bin"},
                run_as=(self._uid, self._gid) if drop_privileges else None,
            )
        finally:
            for fd in opened:
                os.close(fd)
        return SandboxResult(
            stdout=decode_capped(outcome.stdout),
            stderr=decode_capped(outcome.stderr),
            exit_code=outcome.exit_code,
            timed_out=outcome.timed_out,
            truncated=outcome.truncated,
            backend=self.name,
            sandboxed=True,
            duration_s=outcome.duration_s,
        )
