"""The program that starts inside the sandbox: limits itself, loads the files, runs the user's code.

Its source is handed to the interpreter with `python3 -c`, so it must only use the standard
library and syntax every supported system Python (3.8+) understands. Protocol:
argv[1] is a JSON config {"data_dir", "files", "channel_fd", "limits"}; stdin carries the
user's code; stdout/stderr are the user's. Exit code 1 means the user's code raised.

With a tool channel (code mode), argv[2] is the source of channel_client.py: the channel
becomes descriptor 3 (the only one kept besides 0-2), and the code finds `call_tool`, `tools`,
`find_tools`, the `ToolError` exceptions and `input` (the run's input values). Code may end
with a top-level `return <value>`: the value is the run's result (sent over the channel; printed
as JSON without one).
"""

import ast
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


CHANNEL_FD = 3


def _keep_only_channel(channel_fd):
    """Close every descriptor above 2 but the channel, which becomes CHANNEL_FD; None without one."""
    if channel_fd is None:
        os.closerange(3, 1 << 16)
        return None
    if channel_fd != CHANNEL_FD:
        os.dup2(channel_fd, CHANNEL_FD)
    os.closerange(CHANNEL_FD + 1, 1 << 16)
    return CHANNEL_FD


def _has_top_level_return(tree):
    """True when a `return` sits in the code's own body (not inside a def or class of it)."""
    pending = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Return):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        pending.extend(ast.iter_child_nodes(node))
    return False


RESULT_FUNCTION = "__nexus_body__"


def _compiled(code):
    """The code compiled; with a top-level `return` its body becomes a function's (called after)."""
    tree = ast.parse(code, "<python_sandbox>", "exec")
    if not _has_top_level_return(tree):
        return compile(tree, "<python_sandbox>", "exec"), False
    # A template def keeps the FunctionDef fields right for whichever Python runs this.
    wrapper = ast.parse("def " + RESULT_FUNCTION + "():\n    pass\n").body[0]
    assert isinstance(wrapper, ast.FunctionDef)
    wrapper.body = tree.body
    module = ast.Module(body=[wrapper], type_ignores=[])
    ast.fix_missing_locations(module)
    return compile(module, "<python_sandbox>", "exec"), True


def _connect(channel, client_source, namespace):
    """Put the tool channel's names into the code's namespace; returns the connection."""
    client: dict = {"__name__": "nexus_channel"}
    exec(compile(client_source, "<nexus-channel>", "exec"), client)
    connection = client["Channel"](channel)
    namespace.update(connection.names())
    return connection


def main():
    config = json.loads(sys.argv[1])
    client_source = sys.argv[2] if len(sys.argv) > 2 else None
    code = sys.stdin.buffer.read().decode("utf-8", "replace")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    # Nothing the launcher may have left open (pipes, directory fds) reaches the user's code,
    # except the tool channel when there is one.
    channel = _keep_only_channel(config.get("channel_fd"))
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
    connection = None
    try:
        if channel is not None and client_source is not None:
            connection = _connect(channel, client_source, namespace)
        compiled, returns = _compiled(code)
        exec(compiled, namespace)
        if returns:
            value = namespace[RESULT_FUNCTION]()
            if connection is not None:
                connection.send_result(value)
            elif value is not None:
                print(value if isinstance(value, str) else json.dumps(value, default=str))
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
