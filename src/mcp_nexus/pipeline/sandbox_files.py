"""Which offloaded files one python_sandbox call mounts: the ones it names, and only the caller's own.

Models often skip `files` and write `open('/data/tool_output_<uuid>.json')`, or the bare name
from the alert, or just use `data`. So when `files` is omitted (or empty) the file names the
code mentions are mounted; when it names none but reads the data, the call is refused with
exactly what to pass. Every file, named in `files` or in the code, must belong to the caller
(`OffloadFolder.owners`); a file that does not, or does not exist, gets one and the same
answer, so a caller learns nothing about other callers' files.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from mcp_nexus.pipeline.offload_folder import OffloadedFile, OffloadFolder

SANDBOX_DATA_PREFIX = "/data/"
_NAMED_FILE = re.compile(r"tool_output_[0-9A-Za-z_-]+\.json")
_DATA_NAMES = frozenset({"data", "files", "DATA_DIR"})  # what the sandbox defines from the mounted files
_RECENT_LISTED = 5


class FileChoiceError(ValueError):
    """The call names files it may not read, or reads data without naming any; the text says what to pass."""


def named_files(code: str) -> list[str]:
    """Offloaded file names in the code (with or without a path before them), first mention first."""
    return list(dict.fromkeys(_NAMED_FILE.findall(code)))


def reads_data(code: str) -> bool:
    """True when the code uses what the sandbox loads from the files (`data`, `files`, `DATA_DIR`
    before assigning them itself) or a path under /data. Code that does not parse is not judged
    here: the sandbox reports its syntax error."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    first_load: dict[str, int] = {}
    first_store: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in _DATA_NAMES:
            seen = first_load if isinstance(node.ctx, ast.Load) else first_store
            seen[node.id] = min(seen.get(node.id, node.lineno), node.lineno)
        elif isinstance(node, ast.arg) and node.arg in _DATA_NAMES:
            first_store[node.arg] = min(first_store.get(node.arg, node.lineno), node.lineno)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and (node.value == "/data" or node.value.startswith(SANDBOX_DATA_PREFIX))
        ):
            return True
    # `data = data[0]` reads before it writes; `data = [1]` on an earlier line makes it the code's own.
    return any(line <= first_store.get(name, line) for name, line in first_load.items())


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.0f} h"


def _listing(recent: list[OffloadedFile], max_age: float) -> str:
    if not recent:
        return (
            f"This client has no offloaded files now (they are kept {_age(max_age)}): call the tool "
            "whose result was offloaded again and use the file its SYSTEM_ALERT names."
        )
    lines = [f"- {f.name} ({f.bytes} bytes, saved {_age(f.age_s)} ago)" for f in recent]
    return "This client's recent offloaded files, newest first:\n" + "\n".join(lines)


def _example(recent: list[OffloadedFile]) -> str:
    name = recent[0].name if recent else "tool_output_<uuid>.json"
    return f"files: {json.dumps([name])}"


def _bare(name: Any) -> Any:
    """`/data/tool_output_….json` (the path the code sees) names the same file as the bare name."""
    if isinstance(name, str) and name.startswith(SANDBOX_DATA_PREFIX):
        return name[len(SANDBOX_DATA_PREFIX) :]
    return name


def choose_files(folder: OffloadFolder, owner: str, code: Any, files: Any) -> Any:
    """The `files` to mount for this call (blocking: reads owner records; run it in a thread).

    `files` given: the caller's list (paths under /data made bare), each one checked for
    ownership; anything that is not a list goes on as is, for the sandbox's own check to refuse.
    Omitted or empty: the files the code names, else none if the code does not read data.
    Raises FileChoiceError naming what to pass.
    """
    if files is not None and not isinstance(files, list | tuple):
        return files
    wanted = [_bare(name) for name in files or []]
    from_code = not wanted
    if from_code:
        wanted = named_files(code) if isinstance(code, str) else []
        if not wanted:
            if isinstance(code, str) and reads_data(code):
                recent = folder.owned_files(owner, _RECENT_LISTED)
                raise FileChoiceError(
                    "python_sandbox: the code reads `data` (or /data) but no file was given: pass the "
                    f"file its SYSTEM_ALERT names in `files`, e.g. {_example(recent)} (or write that "
                    f"name in the code: open('/data/<name>')).\n{_listing(recent, folder.max_age)}"
                )
            return []
    refused = [name for name in wanted if isinstance(name, str) and not folder.owned_by(name, owner)]
    if refused:
        recent = folder.owned_files(owner, _RECENT_LISTED)
        where = "named in the code " if from_code else ""
        names = ", ".join(repr(name) for name in refused)
        what = f"file {names} {where}does not" if len(refused) == 1 else f"files {names} {where}do not"
        raise FileChoiceError(
            f"python_sandbox: {what} exist among this client's offloaded files "
            "(it may have expired, or never been this client's): pass in `files` only names from "
            f"SYSTEM_ALERTs this client received, e.g. {_example(recent)}.\n"
            f"{_listing(recent, folder.max_age)}"
        )
    return wanted


def unlisted_named_files(code: Any, files: Any) -> list[str]:
    """Files the code names that an explicit `files` list left out (for a hint when the run fails)."""
    if not isinstance(code, str) or not isinstance(files, list | tuple) or not files:
        return []
    given = {_bare(name) for name in files}
    return [name for name in named_files(code) if name not in given]
