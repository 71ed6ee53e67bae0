"""Where a stdio server's `command` is found, the way the gateway will look for it at start.

The gateway (upstream/child_process.py, `_check_executable`) runs `command` as written: a
name without a `/` is searched on the PATH the child gets (the server's `env.PATH` if set,
else the gateway's own PATH); a path with a `/` is taken from the server's `cwd`, else from
the folder `nexus serve` starts in. Neither the config file's folder nor the virtualenv's
`bin/` is searched: when the command is only there, `nexus config check` says so and how to
write it instead, since the server would fail at start.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CommandLookup:
    found: bool
    path: str | None = None  # where it was found (the gateway's lookup), or where it only is (a hint)
    problem: str | None = None  # why the gateway will not start it, and what to write instead


def _runnable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _venv_bin() -> Path:
    """The `bin/` folder of the environment Nexus runs in (`.venv/bin`, also when not activated)."""
    return Path(sys.executable).parent


def lookup_command(
    command: str,
    *,
    env: Mapping[str, str],
    cwd: str | None,
    config_folder: Path | None,
    environ: Mapping[str, str] | None = None,
    start_folder: Path | None = None,
) -> CommandLookup:
    """Resolve `command` like the gateway; when it is not found, look where a user may think it is.

    `environ` is the gateway's environment (default: this process's), `start_folder` the folder
    `nexus serve` will start in (default: the current one).
    """
    environ = os.environ if environ is None else environ
    start = Path.cwd() if start_folder is None else start_folder
    if os.sep in command or (os.altsep and os.altsep in command):
        return _lookup_path(command, cwd, config_folder, start)
    search = env.get("PATH", environ.get("PATH", os.defpath))
    where = shutil.which(command, path=search)
    if where is not None:
        return CommandLookup(True, where)
    hints: list[str] = []
    venv = _venv_bin() / command
    if _runnable(venv):
        hints.append(f"it is in {venv.parent}, which is not on PATH: write the full path {str(venv)!r}")
    if config_folder is not None and _runnable(config_folder / command):
        beside = config_folder / command
        hints.append(f"it is beside the config file: write the full path {str(beside)!r}")
    what = "not found on PATH" + (" (the server's env.PATH)" if "PATH" in env else "")
    return CommandLookup(False, None, f"{command!r} is {what}" + (f"; {'; '.join(hints)}" if hints else ""))


def _lookup_path(command: str, cwd: str | None, config_folder: Path | None, start: Path) -> CommandLookup:
    given = Path(command)  # as written: the gateway expands no '~'
    base = Path(cwd) if cwd is not None else start
    if not base.is_absolute():
        base = start / base
    target = given if given.is_absolute() else base / given
    if _runnable(target):
        return CommandLookup(True, str(target))
    if command.startswith("~"):
        return CommandLookup(
            False, None, f"{command!r}: '~' is not expanded when the server starts: write the full path"
        )
    if target.is_file():
        return CommandLookup(
            False,
            str(target),
            f"{str(target)!r} is not executable (chmod +x it, or run it with its interpreter)",
        )
    if target.exists():
        return CommandLookup(False, str(target), f"{str(target)!r} is a folder, not a program")
    problem = f"{str(target)!r} does not exist"
    if not given.is_absolute() and config_folder is not None and _runnable(config_folder / given):
        where = "'cwd'" if cwd is not None else "the folder nexus serve starts in"
        problem += (
            f" (a relative command is taken from {where}, not from the config file's folder; "
            f"it is at {str(config_folder / given)!r}: write that, or set 'cwd')"
        )
    return CommandLookup(False, None, problem)
