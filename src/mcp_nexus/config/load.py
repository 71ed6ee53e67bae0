"""Read a config file of any accepted format into one validated `NexusConfig`.

Layers: the built-in servers that ship with Nexus come first, then the user's file; a
user's server with the same key, or running the same built-in module under another key
(the Lumi dialect's `builtin_device_control`), replaces the built-in one, and
`"include_builtins": false` under `gateway` drops the built-in layer.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from types import UnionType
from typing import Any, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from mcp_nexus.config.builtins import builtin_servers
from mcp_nexus.config.errors import ConfigError, ConfigProblem
from mcp_nexus.config.formats import Normalised, closest_key, normalise
from mcp_nexus.config.interpolate import Interpolated, Variables, interpolate, parse_inputs, workspace_folder
from mcp_nexus.config.schema import NexusConfig

MAX_CONFIG_BYTES = 4 * 1024 * 1024
"""A config file larger than this is refused unread (a real one is a few kilobytes)."""

MAX_CONFIG_DEPTH = 64
"""Objects and lists nested deeper than this are refused (a real config nests about 6 levels)."""

MAX_CONFIG_VALUES = 1_000_000
"""Values a document may hold once YAML aliases are expanded (a "billion laughs" file is refused)."""


def read_config_bytes(path: Path, source: str, limit: int = MAX_CONFIG_BYTES) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; anything else is a ConfigError.

    Opened without blocking (a FIFO without a writer would block `open`), checked to be a regular
    file (`/dev/zero`, a FIFO, a socket or a tty never end), and read at most `limit + 1` bytes
    whatever the file claims, so a file growing while it is read cannot take more either.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise ConfigError(
            source, [ConfigProblem("", f"cannot read the file: {exc.strerror or exc}")]
        ) from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(
                source,
                [ConfigProblem("", f"not a regular file ({_file_kind(info.st_mode)}): refused unread")],
            )
        if info.st_size > limit:
            raise ConfigError(source, [_too_large(info.st_size, limit)])
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise ConfigError(
            source, [ConfigProblem("", f"cannot read the file: {exc.strerror or exc}")]
        ) from exc
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise ConfigError(source, [_too_large(len(data), limit, grew=True)])
    return data


def _file_kind(mode: int) -> str:
    kinds = (
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    )
    return next((name for test, name in kinds if test(mode)), "not a plain file")


def _too_large(size: int, limit: int, *, grew: bool = False) -> ConfigProblem:
    what = "grew past" if grew else f"is {size:,} bytes, more than"
    return ConfigProblem(
        "", f"the file {what} the {limit:,}-byte limit for a config (MAX_CONFIG_BYTES): refused"
    )


def decode_config_text(data: bytes, source: str) -> str:
    """UTF-8 text, or a ConfigError saying the file is binary (a NUL byte) or not UTF-8."""
    nul = data.find(b"\0")
    if nul >= 0:
        raise ConfigError(
            source, [ConfigProblem("", f"a binary file, not a config (a NUL byte at offset {nul}): refused")]
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            source,
            [
                ConfigProblem(
                    "", f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}): refused"
                )
            ],
        ) from exc


def _too_deep(source: str) -> ConfigError:
    return ConfigError(
        source,
        [ConfigProblem("", f"nested deeper than {MAX_CONFIG_DEPTH} levels (MAX_CONFIG_DEPTH): refused")],
    )


def check_shape(doc: Any, source: str) -> None:
    """Refuse a document nested deeper than MAX_CONFIG_DEPTH, holding more than MAX_CONFIG_VALUES
    values once YAML aliases are expanded, or referring to itself (`a: &a [*a]`).

    Without recursion, and each container visited once however many aliases point at it, so the
    check itself costs no more than the parsed document.
    """
    heights: dict[int, tuple[int, int]] = {}  # id -> (levels below and including it, values in it)
    open_ids: set[int] = set()
    stack: list[tuple[Any, bool]] = [(doc, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = list(node.values()) if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None or (not done and key in heights):
            continue
        if done:
            open_ids.discard(key)
            below = [heights.get(id(c), (0, 1)) for c in children]
            height = 1 + max((h for h, _ in below), default=0)
            count = 1 + sum(n for _, n in below)
            if height > MAX_CONFIG_DEPTH:
                raise _too_deep(source)
            if count > MAX_CONFIG_VALUES:
                raise ConfigError(
                    source,
                    [
                        ConfigProblem(
                            "",
                            f"holds more than {MAX_CONFIG_VALUES:,} values once its YAML aliases are "
                            "expanded (MAX_CONFIG_VALUES): refused",
                        )
                    ],
                )
            heights[key] = (height, count)
            continue
        if key in open_ids:
            raise ConfigError(
                source, [ConfigProblem("", "a YAML alias refers to a node that holds it: refused")]
            )
        if len(open_ids) >= MAX_CONFIG_DEPTH:
            raise _too_deep(source)
        open_ids.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children if isinstance(child, dict | list))


def _parse_text(text: str, source: str) -> Any:
    try:
        doc = _parse_document(text, source)
    except RecursionError:
        raise _too_deep(source) from None
    check_shape(doc, source)
    return doc


def _parse_document(text: str, source: str) -> Any:
    if source.endswith((".yaml", ".yml")):
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "somewhere"
            raise ConfigError(source, [ConfigProblem("", f"not valid YAML ({where}): {exc}")]) from exc
        except ValueError as exc:  # e.g. an integer of more digits than Python converts
            raise ConfigError(source, [ConfigProblem("", f"not valid YAML: {exc}")]) from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            source, [ConfigProblem("", f"not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}")]
        ) from exc
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise ConfigError(source, [ConfigProblem("", f"not valid JSON: {exc}")]) from exc


__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_CONFIG_DEPTH",
    "builtin_servers",
    "config_from_document",
    "load_config",
    "read_config_bytes",
]


def _with_builtins(servers: dict[str, Any]) -> dict[str, Any]:
    """The built-in layer under the user's servers.

    A user server replaces a built-in of the same key, and also one running the same module
    under bare names when the built-in uses bare names too (the Lumi dialect's
    `builtin_device_control` is the built-in `device`): the same tools twice under the same
    names would only shadow each other. A second instance under its own namespace (a Cortex
    over another folder) runs beside the built-in one.
    """
    bare_user_modules = {
        entry.get("module")
        for entry in servers.values()
        if isinstance(entry, dict) and entry.get("namespace") == ""
    }
    merged = {
        name: {**entry, "name": name}
        for name, entry in builtin_servers().items()
        if not (entry.get("namespace") == "" and entry.get("module") in bare_user_modules)
    }
    merged.update(servers)
    return merged


def _error_path(loc: tuple[int | str, ...], normalised: Normalised) -> str:
    parts = [str(p) for p in loc]
    if len(parts) >= 2 and parts[0] == "servers" and parts[1] in normalised.origin:
        head = normalised.origin[parts[1]]
        rest = parts[2:]
    else:
        head, rest = "", parts
    out = head
    for part in rest:
        out += f"[{part}]" if part.isdigit() else (f".{part}" if out else part)
    return out


_SECRET_PARTS = (
    "token",
    "api_key",
    "apikey",
    "authorization",
    "password",
    "secret",
    "endpoints",
    "headers",
    "url",
    "env",
    "cookie",
    "args",
)


def _shown_input(loc: tuple[int | str, ...], value: Any, interpolated: Interpolated) -> str:
    """What a config error may repeat of the bad value: never anything that can hold a secret.

    Only plain scalars are echoed (a whole server entry may carry headers and keys), nothing
    under a field whose name suggests a secret or a URL (tokens ride in query strings), and
    nothing that came from a `${VAR}`.
    """
    if any(part in str(p).lower() for p in loc for part in _SECRET_PARTS):
        return f"(got a {type(value).__name__})"
    if isinstance(value, str) and value in interpolated.fields:
        return "(got a value from an environment variable)"
    if isinstance(value, dict | list):
        return ""
    return f"(got {value!r})"


def _unwrap(annotation: Any) -> Any:
    """`X | None` -> `X`."""
    while get_origin(annotation) in (Union, UnionType):
        annotation = next(a for a in get_args(annotation) if a is not type(None))
    return annotation


def _model_at(loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The model class a validation error's `loc` points into (`servers.t` -> ServerConfig)."""
    annotation: Any = NexusConfig
    for part in loc:
        annotation = _unwrap(annotation)
        if get_origin(annotation) in (dict, list):
            annotation = get_args(annotation)[-1]  # `part` is a key or an index
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field = annotation.model_fields.get(str(part))
            if field is None:
                return None
            annotation = field.annotation
        else:
            return None
    annotation = _unwrap(annotation)
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _friendly(message: str, loc: tuple[int | str, ...], kind: str) -> str:
    message = message.replace("Value error, ", "").replace("Extra inputs are not permitted", "unknown field")
    if kind == "extra_forbidden" and loc:
        model = _model_at(loc[:-1])
        closest = closest_key(str(loc[-1]), tuple(model.model_fields)) if model else None
        if closest:
            message += f"; did you mean {closest!r}?"
    return message


def config_from_document(
    doc: Any,
    source: str = "<config>",
    env: Mapping[str, str] | None = None,
    *,
    include_builtins: bool | None = None,
    path: Path | None = None,
) -> tuple[NexusConfig, list[ConfigProblem]]:
    """Validate an already-parsed document; returns the config and non-fatal warnings.

    `path` is the file the document came from: `${workspaceFolder}` and a relative `envFile`
    are found from it (the current folder without one).
    """
    problems: list[ConfigProblem] = []
    interpolated = Interpolated()
    workspace = workspace_folder(path)
    variables = Variables(os.environ if env is None else env, workspace)
    if isinstance(doc, dict) and "inputs" in doc:
        # VS Code's declarations of `${input:ID}`: read as written, never substituted themselves.
        variables.inputs = parse_inputs(doc["inputs"], problems)
        doc = {
            **interpolate(
                {k: v for k, v in doc.items() if k != "inputs"}, variables, "", problems, interpolated
            ),
            "inputs": doc["inputs"],
        }
    else:
        doc = interpolate(doc, variables, "", problems, interpolated)
    normalised = normalise(doc, problems, workspace=workspace)
    if problems:
        raise ConfigError(source, problems)
    data = normalised.data
    gateway = data.get("gateway") or {}
    if not isinstance(gateway, dict):
        raise ConfigError(source, [ConfigProblem("gateway", "expected an object")])
    from_file = gateway.pop("include_builtins", True)
    use_builtins = from_file if include_builtins is None else include_builtins
    if use_builtins:
        data["servers"] = _with_builtins(data.get("servers") or {})
    data["gateway"] = gateway
    data["source_format"] = normalised.format
    try:
        config = NexusConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(
            source,
            [
                ConfigProblem(
                    _error_path(err["loc"], normalised),
                    f"{_friendly(err['msg'], err['loc'], err['type'])} {_shown_input(err['loc'], err['input'], interpolated)}".rstrip(),
                )
                if err["type"] not in ("missing",)
                else ConfigProblem(_error_path(err["loc"], normalised), "required field is missing")
                for err in exc.errors()
            ],
        ) from exc
    config.remember_interpolated(interpolated.values)
    return config, normalised.warnings


def load_config(
    path: str | Path | None, env: Mapping[str, str] | None = None, *, include_builtins: bool | None = None
) -> tuple[NexusConfig, list[ConfigProblem]]:
    """Load `path` (JSON or YAML); `None` means the built-in default config alone."""
    if path is None:
        return config_from_document({}, "<built-in defaults>", env, include_builtins=include_builtins)
    source = str(path)
    text = decode_config_text(read_config_bytes(Path(path), source), source)
    return config_from_document(
        _parse_text(text, source), source, env, include_builtins=include_builtins, path=Path(path)
    )
