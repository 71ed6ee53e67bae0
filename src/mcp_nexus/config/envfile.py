"""`envFile` (VS Code, Cursor): a dotenv file whose variables a stdio server gets in its `env`."""

from __future__ import annotations

import re
from pathlib import Path

from mcp_nexus.config.errors import ConfigProblem

_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*(.*?)\s*$")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}
MAX_BYTES = 1024 * 1024
"""An env file larger than this is refused: a dotenv file is a few lines, and a path that names a
device or a huge file by mistake (`/dev/zero`, a log) must not fill the gateway's memory."""


def _value(raw: str) -> str:
    if len(raw) >= 2 and raw[0] == raw[-1] == "'":
        return raw[1:-1]
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)), raw[1:-1])
    return re.split(r"\s+#", raw, maxsplit=1)[0]


def read_env_file(file: Path, path: str, problems: list[ConfigProblem]) -> dict[str, str] | None:
    """`KEY=VALUE` lines (`export` allowed, `#` comments, quoted values); a bad line is a problem.

    Problems name the file and the line number, never the line: it may hold a secret.
    """
    if file.exists() and not file.is_file():  # a FIFO would block the read, a device never end
        problems.append(ConfigProblem(path, f"the env file {str(file)!r} is not a regular file"))
        return None
    try:
        with file.open("rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        problems.append(ConfigProblem(path, f"cannot read the env file {str(file)!r}: {exc.strerror or exc}"))
        return None
    if len(data) > MAX_BYTES:
        problems.append(ConfigProblem(path, f"the env file {str(file)!r} is larger than {MAX_BYTES} bytes"))
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(ConfigProblem(path, f"the env file {str(file)!r} is not UTF-8 (byte {exc.start})"))
        return None
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            problems.append(ConfigProblem(path, f"{str(file)!r} line {number}: expected KEY=VALUE"))
            continue
        values[match.group(1)] = _value(match.group(2))
    return values
