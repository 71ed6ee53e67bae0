"""The fenced code blocks of README.md and docs/*.md, with the marker that says whether and how each runs.

A marker is an HTML comment (GitHub does not render it) on the line right before the opening fence:

    <!-- runnable: config file=nexus.yaml serve -->      a whole config file (JSON or YAML)
    <!-- runnable: shell -->                               commands, run as one bash script
    <!-- runnable: console -->                             `$ ` lines are commands, the rest sample output
    <!-- not runnable: why (a sentence) -->                shown, never run: the reason is required

Options of `config` (any order): `file=NAME` saves the block under NAME in the document's
working folder, for the blocks after it; `env=VAR=VALUE` sets a variable the block needs
(the text beside the block must say so); `touch=NAME` creates an empty file NAME beside it
(a file the block reads, e.g. an `envFile`); `start` also starts it in a gateway and requires
every server READY; `serve` makes it the config the document's shell blocks talk to
(`nexus serve --config NAME`); `fragment` means a part of a file, complete once wrapped in
`{...}` (JSON).

Every block whose info string is a language a user would paste (sh, bash, console, json,
yaml, ...) must carry one of the markers: a new example cannot slip in untested by
forgetting one. Plain ``` blocks (diagrams, sample output) and `text` need none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

PASTED_LANGUAGES = frozenset({"sh", "bash", "shell", "console", "json", "jsonc", "yaml", "yml", "python"})
KINDS = ("config", "shell", "console")
CONFIG_OPTIONS = frozenset({"start", "serve", "fragment"})

_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)(?P<info>.*)$")
_MARKER = re.compile(r"^\s*<!--\s*(?P<what>runnable|not runnable)\s*:\s*(?P<body>.*?)\s*-->\s*$")


class MarkerError(ValueError):
    """A marker the test cannot follow; the message names the file and line."""


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    language: str  # the info string's first word ("" when none)
    text: str
    runnable: bool
    kind: str = ""  # config | shell | console (runnable blocks)
    reason: str = ""  # why not (not runnable blocks)
    options: frozenset[str] = frozenset()
    file: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    touch: tuple[str, ...] = ()

    @property
    def where(self) -> str:
        return f"{self.path.name}:{self.line}"

    @property
    def marked(self) -> bool:
        return self.runnable or bool(self.reason)


def _parse_marker(
    body: str, where: str
) -> tuple[str, frozenset[str], str | None, dict[str, str], tuple[str, ...]]:
    words = body.split()
    if not words or words[0] not in KINDS:
        raise MarkerError(f"{where}: 'runnable:' takes one of {', '.join(KINDS)} first, got {body!r}")
    kind, options, file, env, touch = words[0], set(), None, {}, []
    for word in words[1:]:
        if kind != "config":
            raise MarkerError(f"{where}: a {kind} block takes no options, got {word!r}")
        if word.startswith("file="):
            file = word.removeprefix("file=")
        elif word.startswith("touch="):
            touch.append(word.removeprefix("touch="))
        elif word.startswith("env=") and "=" in word.removeprefix("env="):
            name, _, value = word.removeprefix("env=").partition("=")
            env[name] = value
        elif word in CONFIG_OPTIONS:
            options.add(word)
        else:
            raise MarkerError(
                f"{where}: unknown config option {word!r}; expected file=NAME, env=VAR=VALUE, touch=NAME, "
                f"{', '.join(sorted(CONFIG_OPTIONS))}"
            )
    if "serve" in options and file is None:
        raise MarkerError(f"{where}: 'serve' needs file=NAME (the file `nexus serve --config` reads)")
    return kind, frozenset(options), file, env, tuple(touch)


def read_blocks(path: Path) -> list[Block]:
    """Every fenced block of one Markdown file, in order, with its marker (if any)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        fence, indent = opening["fence"], len(opening["indent"])
        language = (opening["info"].strip().split() or [""])[0].lower()
        body: list[str] = []
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            line = lines[end]  # an indented block (in a list item) loses its fence's indent, no more
            body.append(line[min(indent, len(line) - len(line.lstrip())) :])
            end += 1
        where = f"{path.name}:{index + 1}"
        marker = _MARKER.match(lines[index - 1]) if index > 0 else None
        text = "\n".join(body) + "\n"
        if marker is None:
            blocks.append(Block(path, index + 1, language, text, runnable=False))
        elif marker["what"] == "not runnable":
            if not marker["body"]:
                raise MarkerError(f"{where}: 'not runnable:' needs a reason")
            blocks.append(Block(path, index + 1, language, text, runnable=False, reason=marker["body"]))
        else:
            kind, options, file, env, touch = _parse_marker(marker["body"], where)
            blocks.append(Block(path, index + 1, language, text, True, kind, "", options, file, env, touch))
        index = end + 1
    return blocks


def unmarked(blocks: list[Block]) -> list[Block]:
    """Blocks in a language a user would paste that say neither how they run nor why they do not."""
    return [b for b in blocks if b.language in PASTED_LANGUAGES and not b.marked]


DOC_PORT = re.compile(r"\b87\d\d\b")  # the example ports of the docs (8787, 8799, ...)


def ports_in(blocks: list[Block]) -> list[int]:
    """The example ports the runnable blocks name, in order of first mention."""
    seen: dict[int, None] = {}
    for block in blocks:
        if block.runnable:
            for found in DOC_PORT.findall(block.text):
                seen.setdefault(int(found), None)
    return list(seen)
