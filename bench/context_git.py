"""Context task 2: "which of the 300 git commits touched files under src/, and who made them most often?"

Over the real `mcp-server-git` (PyPI) and a repository generated for the run: `git fast-import`
writes `commits` commits by five authors in one go, each changing one to three small files
among src/, tests/, docs/ and the top level. The log names no files, so a model must look at
every commit (`git_show`): one call per commit. The truth comes from git itself
(`git log --name-only`); an answer is correct when it names exactly the commits that touched
src/ and the author of most of them.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from context_conversation import OFFLOADED_FILE, Conversation, pick, sole_leader

AUTHORS = [("Alice Chen", 5), ("Bob Okafor", 4), ("Chen Wei", 3), ("Dana Ruiz", 2), ("Eve Müller", 1)]
PATHS = [
    *(f"src/pkg/module_{i}.py" for i in range(12)),
    *(f"tests/test_module_{i}.py" for i in range(8)),
    *(f"docs/page_{i}.md" for i in range(6)),
    "README.md",
    "pyproject.toml",
]
SOURCE = "src/"

# The model's code once it has seen a log entry and a git_show (the peek).
COUNT_SOURCE_COMMITS = r"""
touched = []
for sha in commits:
    show = SHOW(sha)
    if re.search(r"^(\+\+\+ b|--- a)/src/", show, re.M):
        touched.append((sha[:7], re.search(r"^Author: (.+) <", show, re.M).group(1)))
by_author = collections.Counter(author for _, author in touched).most_common()
"""


def make_repository(path: Path, commits: int, seed: int = 24) -> Path:
    """A repository of `commits` commits written by `git fast-import` (seconds, not minutes)."""
    rng = random.Random(seed)
    names = [name for name, weight in AUTHORS for _ in range(weight)]
    contents = {p: [f"# {p} line {n}" for n in range(12)] for p in PATHS}
    stream: list[bytes] = []
    for number in range(commits):
        name = rng.choice(names)
        email = name.split()[0].lower() + "@example.com"
        changed = rng.sample(PATHS, rng.randint(1, 3))
        message = f"change {', '.join(Path(p).stem for p in changed)} ({number})"
        stream.append(b"commit refs/heads/main\n")
        stream.append(f"author {name} <{email}> {1_700_000_000 + number * 3600} +0000\n".encode())
        stream.append(f"committer {name} <{email}> {1_700_000_000 + number * 3600} +0000\n".encode())
        stream.append(_data(message.encode()))
        for p in PATHS if number == 0 else changed:
            lines = contents[p]
            lines[rng.randrange(len(lines))] = f"# {p} edit {number}"
            stream.append(f"M 100644 inline {p}\n".encode() + _data(("\n".join(lines) + "\n").encode()))
        stream.append(b"\n")
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "fast-import", "--quiet"], input=b"".join(stream), check=True)
    subprocess.run(["git", "-C", str(path), "checkout", "-q", "main"], check=True)
    return path


def _data(payload: bytes) -> bytes:
    return f"data {len(payload)}\n".encode() + payload + b"\n"


def source_commits(repository: Path) -> tuple[set[str], str]:
    """The truth from git: short hashes of the commits that touched src/, and who made most of them."""
    out = subprocess.run(
        ["git", "-C", str(repository), "log", "--format=@%H%x00%an", "--name-only"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    touched: dict[str, str] = {}
    for block in out.split("@")[1:]:
        header, _, names = block.partition("\n")
        sha, author = header.split("\0")
        if any(line.startswith(SOURCE) for line in names.splitlines()):
            touched[sha[:7]] = author
    return set(touched), sole_leader(Counter(touched.values()), "author of src/ commits")


@dataclass
class GitTask:
    commits: int = 300
    seed: int = 24
    repository: Path | None = None

    def __post_init__(self) -> None:
        self.name = f"git: which of {self.commits} commits touched src/, who made most (mcp-server-git)"
        self.question = (
            f"Which of the {self.commits} commits of the repository at REPO touched files under src/, "
            "and who made them most often?"
        )

    def servers(self, workdir: Path) -> dict[str, Any]:
        """mcp-server-git on one repository, made once (the task only reads it)."""
        if self.repository is None:
            self.repository = make_repository(workdir / "repo", self.commits, self.seed)
            self.truth = source_commits(self.repository)
        self.question = self.question.replace("REPO", str(self.repository))
        command = str(Path(sys.executable).parent / "mcp-server-git")
        return {"git": {"command": command, "args": ["--repository", str(self.repository)]}}

    async def run(self, mode: str, chat: Conversation) -> tuple[bool, str]:
        touched, top = await SCRIPTS[mode](chat, str(self.repository))
        chat.answer(f"{len(touched)} commits touched src/: {', '.join(touched)}. {top} made them most often.")
        hashes, author = self.truth
        return set(touched) == hashes and top == author, f"{len(touched)} commits, most by {top}"


def _commits_in_log(log: str) -> list[str]:
    """The hash of each entry of git_log's text, as the model reads it."""
    return re.findall(r"^Commit: ([0-9a-f]{40})$", log, re.M)


def _answer_from(shows: dict[str, str], commits: list[str]) -> tuple[list[str], str]:
    """The model's reasoning over the git_show texts in its context (the same rule as its code)."""
    scope: dict[str, Any] = {"commits": commits, "SHOW": shows.__getitem__, "re": re}
    scope["collections"] = __import__("collections")
    exec(COUNT_SOURCE_COMMITS, scope)
    return [sha for sha, _ in scope["touched"]], scope["by_author"][0][0]


async def _show_each(
    chat: Conversation, commits: list[str], repo: str, via_call_tool: bool
) -> dict[str, str]:
    calls = []
    for sha in commits:
        arguments = {"repo_path": repo, "revision": sha}
        calls.append(
            ("call_tool", {"name": "git.git_show", "arguments": arguments})
            if via_call_tool
            else ("git.git_show", arguments)
        )
    seen = await chat.batched(calls)
    return {sha: item.text for sha, item in zip(commits, seen, strict=True)}


async def relay(chat: Conversation, repo: str) -> tuple[list[str], str]:
    (log,) = await chat.turn(("git.git_log", {"repo_path": repo, "max_count": 1000}))
    commits = _commits_in_log(log.text)
    return _answer_from(await _show_each(chat, commits, repo, via_call_tool=False), commits)


async def search(chat: Conversation, repo: str) -> tuple[list[str], str]:
    history, contents = await chat.find("show the commit history", "show the files a commit changed")
    pick(history, "git.git_log")
    pick(contents, "git.git_show")
    (log,) = await chat.turn(
        ("call_tool", {"name": "git.git_log", "arguments": {"repo_path": repo, "max_count": 1000}})
    )
    commits = _commits_in_log(log.text)
    return _answer_from(await _show_each(chat, commits, repo, via_call_tool=True), commits)


async def offload(chat: Conversation, repo: str) -> tuple[list[str], str]:
    (log,) = await chat.turn(("git.git_log", {"repo_path": repo, "max_count": 1000}))
    if log.offloaded_file is None:
        raise AssertionError("the log was not offloaded: the offload way cannot be measured")
    # Short hashes only, small enough to come back whole (hashes with authors would be offloaded
    # again); each git_show names its author.
    listing = (
        "import re\n" + r'print(" ".join(h[:8] for h in re.findall(r"^Commit: ([0-9a-f]{40})$", data, re.M)))'
    )
    (rows,) = await chat.turn(("python_sandbox", {"code": listing, "files": [log.offloaded_file]}))
    if rows.offloaded_file is not None or rows.is_error:
        raise AssertionError(f"the list of hashes did not come back whole: {rows.text[:300]}")
    commits = rows.text.split()
    shows = await _show_each(chat, commits, repo, via_call_tool=False)
    return _answer_from(await _read_offloaded_shows(chat, shows), commits)


async def _read_offloaded_shows(chat: Conversation, shows: dict[str, str]) -> dict[str, str]:
    """A git_show too large for the context came back as a file: the model asks the sandbox which
    files each such commit changed (one run for all of them)."""
    offloaded = {
        sha: m.group(0)
        for sha, text in shows.items()
        if text.startswith("SYSTEM_ALERT") and (m := OFFLOADED_FILE.search(text))
    }
    if not offloaded:
        return shows
    code = (
        "import re\n"
        f"for sha, name in {sorted(offloaded.items())!r}:\n"
        "    author = re.search(r'^Author: (.+) <', files[name], re.M).group(1)\n"
        "    print(sha, author, '|', ' '.join(re.findall(r'^(?:\\+\\+\\+ b|--- a)/(\\S+)', files[name], re.M)))"
    )
    (paths,) = await chat.turn(("python_sandbox", {"code": code, "files": sorted(offloaded.values())}))
    for line in paths.text.splitlines():
        head, _, changed = line.partition(" | ")
        sha, _, author = head.partition(" ")
        shows[sha] = f"Author: {author} <>\n" + "".join(f"+++ b/{p}\n" for p in changed.split())
    return shows


def _code(repo: str) -> str:
    return (
        "import re, collections\n"
        f"REPO = {repo!r}\n"
        "log = tools.git.git_log(repo_path=REPO, max_count=1000)\n"
        r'commits = re.findall(r"^Commit: ([0-9a-f]{40})$", log, re.M)' + "\n"
        "SHOW = lambda sha: tools.git.git_show(repo_path=REPO, revision=sha)\n"
        + COUNT_SOURCE_COMMITS
        + 'print(json.dumps({"commits": [sha for sha, _ in touched], "by_author": by_author}))\n'
    )


async def code(chat: Conversation, repo: str) -> tuple[list[str], str]:
    peek = (
        f"print(tools.git.git_log(repo_path={repo!r}, max_count=2))\n"
        f"print(tools.git.git_show(repo_path={repo!r}, revision='HEAD')[:1500])"
    )
    await chat.turn(("python_sandbox", {"code": peek}))
    (done,) = await chat.turn(("python_sandbox", {"code": _code(repo)}))
    if done.is_error:
        raise AssertionError(f"the code failed: {done.text[:2000]}")
    answer = json.loads(done.text)
    return list(answer["commits"]), answer["by_author"][0][0]


SCRIPTS = {"relay": relay, "search": search, "offload": offload, "code": code}
