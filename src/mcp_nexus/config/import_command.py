"""`nexus import`: find the clients' files, merge them (config_import.py), report, write one config.

Exit status: 0 written (or printed with `--dry-run`); 1 no server found to import; 2 the
output exists (without `--force`) or a file named with `--from` cannot be read.
The written file is readable by its owner only (0600): client configs often hold API keys.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO, cast

import yaml

from mcp_nexus.config.client_configs import OS, ClientFile, known_files, named_file
from mcp_nexus.config.config_import import ImportResult, import_configs
from mcp_nexus.config.errors import ConfigError, ConfigProblem
from mcp_nexus.config.jsonc import loads_jsonc
from mcp_nexus.config.load import decode_config_text, read_config_bytes

EXIT_OK, EXIT_NOTHING, EXIT_USAGE = 0, 1, 2


def current_os() -> OS:
    name = platform.system().lower()
    return cast(OS, name) if name in ("darwin", "windows") else "linux"


def _named_files(paths: list[Path], known: list[ClientFile]) -> list[ClientFile]:
    files = []
    for path in paths:
        source = str(path)
        try:
            doc = loads_jsonc(decode_config_text(read_config_bytes(path, source), source))
        except json.JSONDecodeError as exc:
            raise ConfigError(source, [ConfigProblem("", f"not valid JSON: {exc}")]) from exc
        file = named_file(path, doc, known)
        if file is None:
            raise ConfigError(
                source, [ConfigProblem("", "no MCP servers here (expected 'mcpServers', 'servers' or 'mcp')")]
            )
        files.append(file)
    return files


def render_document(result: ImportResult, output: Path | None) -> str:
    doc = result.document()
    if output is not None and output.suffix in (".yaml", ".yml"):
        return str(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def write_private(path: Path, text: str, *, force: bool) -> None:
    """Write `text` to `path`, mode 0600; without `force` an existing file is never replaced (O_EXCL)."""
    if not force:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        return
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # 0600 already
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def print_result(result: ImportResult, out: TextIO) -> None:
    """What was taken, from where; what was merged, renamed, skipped and why; what needs a variable."""
    taken = list(result.taken.values())
    print(f"took {len(taken)} server{'s' if len(taken) != 1 else ''}:", file=out)
    for item in taken:
        print(f"  {item.name}: from {item.source}", file=out)
        for place in item.also_in:
            print(f"    merged: the same definition in {place}", file=out)
        if item.renamed_from is not None:
            print(f"    renamed from {item.renamed_from!r}: {item.why_renamed}", file=out)
    if result.skipped:
        print(f"skipped {len(result.skipped)}:", file=out)
        for skipped in result.skipped:
            print(f"  {skipped.name}: {skipped.source}: {skipped.reason}", file=out)
    needed = result.needed_inputs()
    if needed:
        print("needs an environment variable (a gateway cannot prompt for a VS Code input):", file=out)
        for need in needed:
            default = f" (else its default {need.default!r})" if need.default is not None else ""
            print(f"  {need.server}: ${{input:{need.input_id}}} <- set {need.env_var}{default}", file=out)
    print(f"read {len(result.read)} file{'s' if len(result.read) != 1 else ''}:", file=out)
    for place in result.read:
        print(f"  {place}", file=out)
    if result.missing:
        print(f"not found ({len(result.missing)} places looked at):", file=out)
        for place in result.missing:
            print(f"  {place}", file=out)


def import_command(
    *,
    output: Path,
    sources: list[Path] | None = None,
    force: bool = False,
    dry_run: bool = False,
    home: Path | None = None,
    system: OS | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> int:
    """Run `nexus import`; home, OS, current folder and environment default to this machine's."""
    if output.exists() and not force and not dry_run:
        print(f"{output} exists: pass --force to replace it, or --output another file", file=sys.stderr)
        return EXIT_USAGE
    home = Path.home() if home is None else home
    cwd = Path.cwd() if cwd is None else cwd
    known = known_files(home, system or current_os(), cwd, os.environ if env is None else env)
    try:
        files = _named_files(sources, known) if sources else known
        result = import_configs(files, cwd=cwd, home=home, explicit=bool(sources))
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_USAGE
    report = sys.stderr if dry_run else sys.stdout
    print_result(result, report)
    if not result.taken:
        print("nothing to import: no MCP server found in the files above", file=sys.stderr)
        return EXIT_NOTHING
    text = render_document(result, output)
    if dry_run:
        sys.stdout.write(text)
        return EXIT_OK
    try:
        write_private(output, text, force=force)
    except FileExistsError:
        print(f"{output} exists: pass --force to replace it, or --output another file", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(f"cannot write {output}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    print(
        f"wrote {output} ({len(result.taken)} servers, readable by you only). Check it: nexus config check {output}"
    )
    return EXIT_OK
