"""The program that starts inside the sandbox: limits itself, loads the files, runs the user's code.

Its source is handed to the interpreter with `python3 -c`, so it must only use the standard
library and syntax every supported system Python (3.8+) understands. Protocol:
argv[1] is a JSON config {"data_dir", "files", "limits"}; stdin carries the user's code;
stdout/stderr are the user's. Exit code 1 means the user's code raised.
"""

import json
import os
import resource
import sys
import traceback


def _own_task_count(uid):
    """Count the threads/processes running as `uid` (what RLIMIT_NPROC counts)."""
    count = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            for tid in os.listdir("/proc/" + pid + "/task"):
                if os.stat("/proc/" + pid + "/task/" + tid).st_uid == uid:
                    count += 1
        except OSError:
            continue
    return count


def _apply_limits(limits):
    """Set soft and hard limits so the user's code cannot raise them again."""

    def cap(kind, value):
        resource.setrlimit(kind, (value, value))

    cap(resource.RLIMIT_CORE, 0)
    cpu = int(limits["cpu_seconds"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    cap(resource.RLIMIT_AS, int(limits["memory_bytes"]))
    cap(resource.RLIMIT_FSIZE, int(limits["file_size_bytes"]))
    cap(resource.RLIMIT_NOFILE, int(limits["open_files"]))
    extra = limits.get("extra_processes")
    if extra is not None:
        # RLIMIT_NPROC counts every task of this uid (in the sandbox: only the sandbox's own),
        # and the kernel refuses a fork once the count would exceed it.
        cap(resource.RLIMIT_NPROC, _own_task_count(os.getuid()) + int(extra))


def _parse(raw):
    """JSON when the file is JSON, else its text."""
    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _load_files(data_dir, names):
    loaded = {}
    for name in names:
        with open(os.path.join(data_dir, name), "rb") as handle:
            loaded[name] = _parse(handle.read())
    return loaded


def main():
    config = json.loads(sys.argv[1])
    code = sys.stdin.buffer.read().decode("utf-8", "replace")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    # Nothing the launcher may have left open (pipes, directory fds) reaches the user's code.
    os.closerange(3, 1 << 16)
    _apply_limits(config["limits"])
    files = _load_files(config["data_dir"], config["files"])
    # One file: its content; several: the dict; none: None.
    data = next(iter(files.values())) if len(files) == 1 else (files or None)
    sys.argv = ["python_sandbox"]
    namespace = {
        "__name__": "__main__",
        "__builtins__": __builtins__,
        "data": data,
        "files": files,
        "DATA_DIR": config["data_dir"],
        "json": json,
    }
    try:
        compiled = compile(code, "<python_sandbox>", "exec")
        exec(compiled, namespace)
    except SystemExit:
        raise
    except MemoryError:
        sys.stdout.flush()
        sys.stderr.write("MemoryError: the sandbox memory limit was reached\n")
        sys.exit(1)
    except BaseException as error:
        sys.stdout.flush()
        # Show the user's frames only, not this launcher's.
        tb = error.__traceback__.tb_next if error.__traceback__ is not None else None
        traceback.print_exception(type(error), error, tb)
        sys.exit(1)


if __name__ == "__main__":
    main()
