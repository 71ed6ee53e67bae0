"""`envFile` (VS Code, Cursor): a dotenv file whose variables a stdio server gets in its `env`."""

from __future__ import annotations

import re
from pathlib import Path

from mcp_nexus.config.errors import ConfigProblem

_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*(.*?)\s*$")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


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
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        problems.append(ConfigProblem(path, f"cannot read the env file {str(file)!r}: {exc.strerror or exc}"))
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
