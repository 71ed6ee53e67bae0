"""The syscall filter python_sandbox's code runs under (bubblewrap's `--seccomp FD`).

An allow-list, built with libseccomp (through `pyseccomp`) for the native architecture:

- `ALLOWED_SYSCALLS` run normally: what CPython, its standard library and glibc use to
  compute, read and write files, manage memory, threads, signals, time and local sockets;
- `DENIED_SYSCALLS` fail with EPERM: the kernel attack surface no data-processing code
  needs (tracing other processes, keyrings, mounts, namespaces, BPF, perf, userfaultfd,
  modules, raw I/O, swap, reboot, clock setting...). They are listed so the refusal is
  explicit and each one is tested;
- a few are decided by their arguments: `clone` without namespace flags (threads, fork),
  `personality` only as the query, `socket` of every family but AF_VSOCK (a VM's
  vsock is not confined by the network namespace);
- everything else fails with ENOSYS, as if the kernel did not have it: glibc and CPython
  treat ENOSYS as "not available here" and fall back (clone3 -> clone, for one), which
  EPERM would not trigger;
- a syscall made through another ABI (32-bit `int 0x80`, x32) kills the process, so the
  allow-list cannot be side-stepped by syscall numbers of another architecture.

The program is built once per process (see `syscall_filter_program`) and handed to bwrap in
a memfd per run.
"""

from __future__ import annotations

import errno
import os
import tempfile
from functools import cache

from mcp_nexus.sandbox.errors import SandboxError

# Every flag that makes clone() create a namespace (NEWNS, NEWCGROUP, NEWUTS, NEWIPC,
# NEWUSER, NEWPID, NEWNET). CLONE_NEWTIME (0x80) overlaps clone()'s exit-signal byte and is
# only reachable through unshare/clone3, which are refused anyway.
NAMESPACE_CLONE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
PERSONALITY_QUERY = 0xFFFFFFFF
AF_VSOCK = 40

DENIED_SYSCALLS: tuple[str, ...] = (
    # other processes' memory and state
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "process_madvise",
    "pidfd_getfd",
    "kcmp",
    # kernel keyrings
    "add_key",
    "request_key",
    "keyctl",
    # mounts and namespaces
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    "unshare",
    "setns",
    "open_by_handle_at",
    "name_to_handle_at",
    # kernel extension and introspection points
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "fanotify_init",
    "fanotify_mark",
    "lookup_dcookie",
    "syslog",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    # hardware, memory policy and old ABIs
    "iopl",
    "ioperm",
    "modify_ldt",
    "vm86",
    "vm86old",
    "uselib",
    "_sysctl",
    "nfsservctl",
    "mbind",
    "set_mempolicy",
    "migrate_pages",
    "move_pages",
    # system administration
    "swapon",
    "swapoff",
    "reboot",
    "acct",
    "quotactl",
    "quotactl_fd",
    "sethostname",
    "setdomainname",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "vhangup",
)

ALLOWED_SYSCALLS: tuple[str, ...] = (
    # starting the interpreter (the filter is in force before bwrap execs python3)
    "execve",
    "execveat",
    "exit",
    "exit_group",
    # files
    "read",
    "write",
    "readv",
    "writev",
    "pread64",
    "pwrite64",
    "preadv",
    "pwritev",
    "preadv2",
    "pwritev2",
    "open",
    "openat",
    "openat2",
    "creat",
    "close",
    "close_range",
    "lseek",
    "_llseek",
    "dup",
    "dup2",
    "dup3",
    "fcntl",
    "fcntl64",
    "flock",
    "fsync",
    "fdatasync",
    "sync_file_range",
    "ftruncate",
    "ftruncate64",
    "truncate",
    "truncate64",
    "fallocate",
    "fadvise64",
    "fadvise64_64",
    "readahead",
    "sendfile",
    "sendfile64",
    "copy_file_range",
    "splice",
    "tee",
    "stat",
    "stat64",
    "fstat",
    "fstat64",
    "lstat",
    "lstat64",
    "newfstatat",
    "fstatat64",
    "statx",
    "statfs",
    "statfs64",
    "fstatfs",
    "fstatfs64",
    "access",
    "faccessat",
    "faccessat2",
    "getdents",
    "getdents64",
    "getcwd",
    "chdir",
    "fchdir",
    "mkdir",
    "mkdirat",
    "rmdir",
    "rename",
    "renameat",
    "renameat2",
    "link",
    "linkat",
    "symlink",
    "symlinkat",
    "unlink",
    "unlinkat",
    "readlink",
    "readlinkat",
    "chmod",
    "fchmod",
    "fchmodat",
    "chown",
    "fchown",
    "lchown",
    "fchownat",
    "umask",
    "utime",
    "utimes",
    "utimensat",
    "futimesat",
    "getxattr",
    "lgetxattr",
    "fgetxattr",
    "listxattr",
    "llistxattr",
    "flistxattr",
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "removexattr",
    "lremovexattr",
    "fremovexattr",
    "ioctl",
    # memory
    "brk",
    "mmap",
    "mmap2",
    "munmap",
    "mremap",
    "mprotect",
    "madvise",
    "mincore",
    "msync",
    "mlock",
    "mlock2",
    "munlock",
    "mlockall",
    "munlockall",
    "membarrier",
    "memfd_create",
    "pkey_alloc",
    "pkey_free",
    "pkey_mprotect",
    # processes and threads (clone is decided by its flags; the process limit still applies)
    "fork",
    "vfork",
    "wait4",
    "waitid",
    "waitpid",
    "getpid",
    "getppid",
    "gettid",
    "getpgid",
    "getpgrp",
    "setpgid",
    "getsid",
    "setsid",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "getresuid",
    "getresgid",
    "getgroups",
    "capget",
    "set_tid_address",
    "set_robust_list",
    "get_robust_list",
    "rseq",
    "arch_prctl",
    "set_thread_area",
    "get_thread_area",
    "prctl",
    "seccomp",  # a filter can only be narrowed further
    "prlimit64",
    "getrlimit",
    "setrlimit",
    "ugetrlimit",
    "getrusage",
    "times",
    "sysinfo",
    "uname",
    "getcpu",
    "getpriority",
    "setpriority",
    "sched_yield",
    "sched_getaffinity",
    "sched_setaffinity",
    "sched_getparam",
    "sched_getscheduler",
    "sched_getattr",
    "sched_get_priority_max",
    "sched_get_priority_min",
    "sched_rr_get_interval",
    "futex",
    "futex_time64",
    "futex_waitv",
    "pidfd_open",
    "pidfd_send_signal",
    # signals and time
    "kill",
    "tkill",
    "tgkill",
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    "rt_sigpending",
    "rt_sigsuspend",
    "rt_sigtimedwait",
    "rt_sigqueueinfo",
    "rt_tgsigqueueinfo",
    "sigaltstack",
    "sigreturn",
    "restart_syscall",
    "pause",
    "alarm",
    "getitimer",
    "setitimer",
    "timer_create",
    "timer_settime",
    "timer_gettime",
    "timer_getoverrun",
    "timer_delete",
    "nanosleep",
    "clock_nanosleep",
    "clock_gettime",
    "clock_getres",
    "gettimeofday",
    "time",
    "getrandom",
    # waiting on descriptors
    "poll",
    "ppoll",
    "select",
    "_newselect",
    "pselect6",
    "epoll_create",
    "epoll_create1",
    "epoll_ctl",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "eventfd",
    "eventfd2",
    "signalfd",
    "signalfd4",
    "timerfd_create",
    "timerfd_settime",
    "timerfd_gettime",
    "inotify_init",
    "inotify_init1",
    "inotify_add_watch",
    "inotify_rm_watch",
    "pipe",
    "pipe2",
    # sockets (the network namespace is empty: only the sandbox's own loopback exists)
    "socketpair",
    "bind",
    "listen",
    "accept",
    "accept4",
    "connect",
    "getsockname",
    "getpeername",
    "getsockopt",
    "setsockopt",
    "sendto",
    "recvfrom",
    "sendmsg",
    "recvmsg",
    "sendmmsg",
    "recvmmsg",
    "shutdown",
)


class SeccompUnavailableError(SandboxError):
    """The syscall filter cannot be built here (libseccomp or pyseccomp is missing)."""


def _libseccomp():  # type: ignore[no-untyped-def]
    """libseccomp's Python API: PyPI's `pyseccomp` (a dependency), else Debian's python3-seccomp."""
    try:
        import pyseccomp

        return pyseccomp
    except ImportError:
        pass
    except (RuntimeError, OSError) as error:  # pyseccomp raises RuntimeError when it finds no libseccomp
        raise SeccompUnavailableError(
            f"libseccomp is not installed (apt-get install libseccomp2), so the syscall filter "
            f"cannot be built: {error}"
        ) from None
    try:
        import seccomp  # the same API, from Debian's python3-seccomp
    except ImportError:
        raise SeccompUnavailableError(
            "neither the Python package pyseccomp (pip install pyseccomp) nor Debian's "
            "python3-seccomp is installed, so the syscall filter cannot be built"
        ) from None
    return seccomp


@cache
def syscall_filter_program() -> bytes:
    """The compiled BPF program (built once per process). Raises SeccompUnavailableError."""
    seccomp = _libseccomp()
    overlap = set(ALLOWED_SYSCALLS) & set(DENIED_SYSCALLS)
    if overlap:
        raise AssertionError(f"syscalls both allowed and denied: {sorted(overlap)}")
    try:
        rules = seccomp.SyscallFilter(seccomp.ERRNO(errno.ENOSYS))
        rules.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.KILL_PROCESS)
        native = seccomp.Arch.NATIVE

        def known(name: str) -> bool:
            # Negative: not a syscall of this architecture (e.g. `open` on arm64, `iopl` off x86).
            return int(seccomp.resolve_syscall(native, name)) >= 0

        for name in ALLOWED_SYSCALLS:
            if known(name):
                rules.add_rule(seccomp.ALLOW, name)
        for name in DENIED_SYSCALLS:
            if known(name):
                rules.add_rule(seccomp.ERRNO(errno.EPERM), name)
        eperm = seccomp.ERRNO(errno.EPERM)
        # s390 passes clone's flags second; everywhere else first.
        s390 = {arch & 0xFFFFFFFF for arch in (seccomp.Arch.S390, seccomp.Arch.S390X)}
        flags_arg = 1 if seccomp.system_arch() & 0xFFFFFFFF in s390 else 0
        mask = sum(NAMESPACE_CLONE_FLAGS)
        rules.add_rule(seccomp.ALLOW, "clone", seccomp.Arg(flags_arg, seccomp.MASKED_EQ, mask, 0))
        for flag in NAMESPACE_CLONE_FLAGS:
            rules.add_rule(eperm, "clone", seccomp.Arg(flags_arg, seccomp.MASKED_EQ, flag, flag))
        # clone3 (not listed: ENOSYS, the default) passes its flags in memory a filter cannot
        # read; ENOSYS makes glibc fall back to clone, whose flags are checked above.
        rules.add_rule(seccomp.ALLOW, "personality", seccomp.Arg(0, seccomp.EQ, PERSONALITY_QUERY))
        rules.add_rule(eperm, "personality", seccomp.Arg(0, seccomp.NE, PERSONALITY_QUERY))
        if known("socket"):
            rules.add_rule(seccomp.ALLOW, "socket", seccomp.Arg(0, seccomp.NE, AF_VSOCK))
            rules.add_rule(eperm, "socket", seccomp.Arg(0, seccomp.EQ, AF_VSOCK))
        with tempfile.TemporaryFile() as out:
            rules.export_bpf(out)
            out.seek(0)
            program = out.read()
    except OSError as error:
        raise SeccompUnavailableError(f"libseccomp could not build the syscall filter: {error}") from None
    if not program or len(program) % 8:
        raise SeccompUnavailableError(f"libseccomp produced an invalid filter ({len(program)} bytes)")
    return program


def program_fd(program: bytes) -> int:
    """A file descriptor (a memfd, read from the start) holding `program`, for `bwrap --seccomp`."""
    fd = os.memfd_create("nexus-seccomp", os.MFD_CLOEXEC)
    try:
        view = memoryview(program)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd
