"""Every command and config block of README.md and docs/*.md runs as written.

The convention (also in docs/ARCHITECTURE.md, "Docs examples"): an HTML comment on the line
right before a fenced block says how it runs, and GitHub does not show it:

    <!-- runnable: config [file=NAME] [env=VAR=VALUE] [start] [serve] [fragment] -->
    <!-- runnable: shell -->
    <!-- runnable: console -->
    <!-- not runnable: the reason -->

(tests/docs/blocks.py says what each option means, tests/docs/run_blocks.py how each kind runs,
tests/docs/workspace.py where: a folder that looks like a checkout, with free ports in place
of the docs' 87NN ones and a real `nexus serve` as the gateway shell blocks talk to.)

Every sh/bash/console/json/yaml/python block must carry a marker, and README.md must have
runnable blocks of both kinds: the test fails on a failing block, on an unmarked one and on a
README with nothing to run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from docs.blocks import Block, MarkerError, read_blocks, unmarked
from docs.run_blocks import run_document
from docs.workspace import workspace
from support.processes import ROOT

README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]
# Its blocks are benchmark runs of minutes each, recorded with their results: none is marked
# runnable, and the marker check leaves the file alone (bench/ scripts are run by their own tests).
UNCHECKED = {"PERFORMANCE.md"}


def _runnable(path: Path) -> list[Block]:
    return [block for block in read_blocks(path) if block.runnable]


RUNNABLE_DOCS = [path for path in DOCS if _runnable(path)]


def test_readme_has_runnable_commands_and_configs() -> None:
    kinds = {block.kind for block in _runnable(README)}
    assert {"shell", "config"} <= kinds, f"README.md's runnable block kinds: {sorted(kinds)}"


def test_every_block_a_user_would_paste_says_whether_it_runs() -> None:
    missing = [
        f"{block.where} ```{block.language}"
        for path in DOCS
        if path.name not in UNCHECKED
        for block in unmarked(read_blocks(path))
    ]
    assert missing == [], (
        "mark each block `<!-- runnable: config|shell|console -->` or `<!-- not runnable: why -->` "
        f"on the line before its fence: {missing}"
    )


@pytest.mark.parametrize("path", RUNNABLE_DOCS, ids=[path.name for path in RUNNABLE_DOCS])
def test_runnable_blocks_run_as_written(path: Path, tmp_path: Path) -> None:
    with workspace(tmp_path, read_blocks(path)) as docs:
        failures = run_document(docs)
    assert failures == [], "\n\n".join(failures)


# -- the test itself can fail ----------------------------------------------------------------------


def _document(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "EXAMPLE.md"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_failing_command_or_config_fails_the_document(tmp_path: Path) -> None:
    path = _document(
        tmp_path,
        "<!-- runnable: config -->\n```json\n"
        '{"mcpServers": {"r": {"url": "https://example.com/mcp", "headers": {"A": "${NOT_SET_ANYWHERE}"}}}}\n'
        "```\n\n<!-- runnable: console -->\n```console\n$ true\n$ false\nsample output\n```\n",
    )
    folder = tmp_path / "work"
    folder.mkdir()
    with workspace(folder, read_blocks(path)) as docs:
        failures = run_document(docs)
    assert len(failures) == 2, failures
    assert failures[0].startswith("EXAMPLE.md:2 (config)") and "NOT_SET_ANYWHERE" in failures[0]
    assert failures[1].startswith("EXAMPLE.md:7 (console)") and "line 2" in failures[1]


def test_markers_are_read_strictly(tmp_path: Path) -> None:
    blocks = read_blocks(
        _document(
            tmp_path,
            "```sh\nls\n```\n<!-- not runnable: it needs a phone -->\n```sh\nadb\n```\n```\nplain\n```\n"
            "<!-- runnable: config file=n.yaml env=A=b serve -->\n```yaml\nservers: {}\n```\n",
        )
    )
    assert [b.where for b in unmarked(blocks)] == ["EXAMPLE.md:1"]
    assert blocks[1].reason == "it needs a phone"
    assert (blocks[3].file, blocks[3].env, blocks[3].options) == ("n.yaml", {"A": "b"}, frozenset({"serve"}))
    for bad in (
        "<!-- runnable: sometimes -->",
        "<!-- runnable: config quickly -->",
        "<!-- not runnable: -->",
    ):
        with pytest.raises(MarkerError, match=r"EXAMPLE\.md:2"):
            read_blocks(_document(tmp_path, f"{bad}\n```sh\nls\n```\n"))
