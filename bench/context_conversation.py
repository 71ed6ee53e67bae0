"""The context benchmark's model side: a scripted conversation over a real gateway, and what it costs.

No model runs here. Each task (bench/context_lights.py, context_git.py, context_cortex.py) writes,
per way of working, the turns a model would take: which tools it calls, with which arguments,
what code it sends to python_sandbox, and the answer it gives, computed only from what reached
its context. The gateway's side is real: every call goes through a running Nexus (Runtime) and
its whole pipeline, to real MCP servers.

What is counted, in o200k_base tokens (one count per message, summed):
  - context tokens: what the model reads at its last turn (tool definitions + every message);
  - input tokens: what it reads over all its turns (each turn re-reads the context so far,
    which is what a model API bills);
  - written tokens: what the model writes (tool calls with their arguments, code, the answer).
A turn may carry up to PARALLEL_CALLS tool calls, which the client runs at once (as clients
do with parallel tool calls): generous to the ways of working that need many calls.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import json
import re
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import mcp_types as types

from mcp_nexus.catalog.tool_listing import listed_tools
from mcp_nexus.config.load import config_from_document
from mcp_nexus.pipeline.call import Caller
from mcp_nexus.pipeline.sandbox_tool import SANDBOX_META_KEY
from mcp_nexus.runtime import Runtime, RuntimeOptions

PARALLEL_CALLS = 10
"""Most tool calls a scripted model puts in one turn."""

MODES = ("relay", "search", "offload", "code")
MODE_LABELS = {
    "relay": "relay: every result in context",
    "search": "search mode: find_tools, then call_tool",
    "offload": "offload + python_sandbox (as before code mode)",
    "code": "code mode: python_sandbox calls the tools",
}
CALLER = Caller("stdio", "context-bench")
OFFLOADED_FILE = re.compile(r"tool_output_[\w-]+\.json")
"""The file an offload notice names: the model reads it from the notice's text."""


class Counter(Protocol):
    def encode(self, text: str) -> Sequence[int]: ...


@functools.cache  # loading the vocabulary takes seconds; one per process
def tokenizer() -> tuple[str, Counter]:
    """o200k_base: tiktoken's when it can load it, else the same vocabulary from bpe-openai (offline)."""
    try:
        import tiktoken

        return "tiktoken o200k_base", tiktoken.get_encoding("o200k_base")
    except Exception:  # no network: tiktoken cannot download its encoding file
        import bpe_openai

        return (
            "o200k_base via bpe-openai (tiktoken could not download its encoding offline)",
            bpe_openai.get_encoding("o200k_base"),
        )


def gateway_document(mode: str, servers: dict[str, Any], data: Path) -> dict[str, Any]:
    """The gateway config of one way of working: the same servers, offload and search set per mode."""
    gateway: dict[str, Any] = {
        "include_builtins": False,
        "offload_dir": str(data / "offload"),
        "index": {"persist": False},
        # A task's code makes a few hundred calls (one git_show per commit): the defaults (200
        # calls, 10 s) are meant for one step of a conversation, not a whole task.
        "sandbox_tool_calls": 1000,
        "sandbox_timeout": 120,
        # The default of 5 calls a second per tool would make the many-call ways wait (or retry)
        # on rate limits: this benchmark measures context, not limits.
        "rate_limit": "1000/second",
    }
    if mode in ("relay", "search"):
        gateway["offload_threshold"] = None  # every result whole, in the model's context
    if mode == "search":
        gateway["tool_search"] = {"mode": "on"}
    return {"gateway": gateway, "servers": servers}


@contextlib.asynccontextmanager
async def running_gateway(mode: str, servers: dict[str, Any]) -> AsyncIterator[Runtime]:
    """A real gateway in this process for one way of working, every server ready; stopped on exit."""
    with tempfile.TemporaryDirectory(prefix="nexus-context-") as tmp:
        config, _ = config_from_document(gateway_document(mode, servers, Path(tmp)))
        runtime = Runtime(config, RuntimeOptions(http=False, bridge=False, watch=False, wait_ready=True))
        await runtime.__aenter__()
        try:
            not_ready = sorted(name for name, up in runtime.gateway.upstreams.items() if not up.is_ready)
            if not_ready:
                raise RuntimeError(f"servers not ready for the {mode} run: {', '.join(not_ready)}")
            yield runtime
        finally:
            await runtime.__aexit__(None, None, None)


def text_of(result: types.CallToolResult) -> str:
    """What a client puts in the model's context for a result: its text parts."""
    texts = [part.text for part in result.content if isinstance(part, types.TextContent)]
    if not texts and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\n".join(texts)


@dataclass
class Seen:
    """One tool result as the model sees it."""

    text: str
    is_error: bool
    offloaded_file: str | None  # the file its offload notice names
    inner_calls: int  # calls made by python_sandbox code in this run

    def json(self) -> Any:
        """The result parsed, for a script that reads data it has in context."""
        return json.loads(self.text)


@dataclass
class Conversation:
    """One scripted conversation: the listed tools, the messages, and the counts."""

    runtime: Runtime
    counter: Counter
    question: str
    tools: list[dict[str, Any]] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    message_tokens: list[int] = field(default_factory=list)
    tool_tokens: int = 0
    turns: int = 0
    tool_calls: int = 0
    inner_calls: int = 0
    input_tokens: int = 0
    written_tokens: int = 0
    started: float = field(default_factory=time.perf_counter)
    finished: float | None = None  # when the model answered

    def __post_init__(self) -> None:
        gateway = self.runtime.gateway
        listed = listed_tools(
            gateway.catalog, gateway.config.gateway.tool_search, CALLER.frontend, CALLER.client
        )
        self.tools = [
            {"name": t.name, "description": t.description or "", "inputSchema": t.input_schema}
            for t in listed
        ]
        self.tool_tokens = len(self.counter.encode(json.dumps(self.tools, ensure_ascii=False)))
        self._add({"role": "user", "content": self.question})

    @property
    def listed(self) -> set[str]:
        return {tool["name"] for tool in self.tools}

    @property
    def context_tokens(self) -> int:
        return self.tool_tokens + sum(self.message_tokens)

    def _add(self, message: dict[str, Any]) -> int:
        tokens = len(self.counter.encode(json.dumps(message, ensure_ascii=False)))
        self.messages.append(message)
        self.message_tokens.append(tokens)
        return tokens

    async def turn(self, *calls: tuple[str, dict[str, Any]]) -> list[Seen]:
        """One model turn: it reads the context and writes these tool calls; the client runs them at once."""
        if not 1 <= len(calls) <= PARALLEL_CALLS:
            raise ValueError(f"a turn carries 1 to {PARALLEL_CALLS} tool calls, got {len(calls)}")
        unlisted = [name for name, _ in calls if name not in self.listed]
        if unlisted:
            raise AssertionError(f"the script calls tools the model was not shown: {unlisted}")
        self.input_tokens += self.context_tokens
        self.turns += 1
        self.tool_calls += len(calls)
        self.written_tokens += self._add(
            {
                "role": "assistant",
                "tool_calls": [
                    {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}
                    for name, arguments in calls
                ],
            }
        )
        results = await asyncio.gather(
            *(
                self.runtime.gateway.call_tool_result(name, arguments, caller=CALLER)
                for name, arguments in calls
            )
        )
        seen = []
        for result in results:
            inner = int(((result.meta or {}).get(SANDBOX_META_KEY) or {}).get("tool_calls") or 0)
            self.inner_calls += inner
            text = text_of(result)
            named = OFFLOADED_FILE.search(text) if text.startswith("SYSTEM_ALERT") else None
            item = Seen(text, bool(result.is_error), named.group(0) if named else None, inner)
            self._add({"role": "tool", "content": item.text})
            seen.append(item)
        return seen

    async def batched(self, calls: list[tuple[str, dict[str, Any]]]) -> list[Seen]:
        """Calls the model must all make, PARALLEL_CALLS per turn."""
        seen: list[Seen] = []
        for start in range(0, len(calls), PARALLEL_CALLS):
            seen += await self.turn(*calls[start : start + PARALLEL_CALLS])
        return seen

    async def find(self, *queries: str) -> list[list[str]]:
        """Search mode: find_tools for each query in one turn; the names of the hits of each, best first."""
        seen = await self.turn(*(("find_tools", {"query": query, "limit": 5}) for query in queries))
        # The hits are a JSON array; a note on hits left out may follow it on its own line.
        return [
            [hit["name"] for hit in json.loads(item.text.split("\nMore matches")[0])]
            if item.text.startswith("[")
            else []
            for item in seen
        ]

    def answer(self, text: str) -> None:
        """The model's last turn: it reads everything and answers the user."""
        self.input_tokens += self.context_tokens
        self.turns += 1
        self.written_tokens += self._add({"role": "assistant", "content": text})
        self.finished = time.perf_counter()

    def row(self, task: str, mode: str, correct: bool, answer: str) -> dict[str, Any]:
        return {
            "task": task,
            "mode": MODE_LABELS[mode],
            "context_tokens": self.context_tokens,
            "tool_list_tokens": self.tool_tokens,
            "input_tokens": self.input_tokens,
            "written_tokens": self.written_tokens,
            "turns": self.turns,
            "tool_calls": self.tool_calls,
            "calls_from_code": self.inner_calls,
            "wall_s": round((self.finished or time.perf_counter()) - self.started, 2),
            "correct": correct,
            "answer": answer,
        }


async def read_back(runtime: Runtime, server: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A server's own structured answer, asked past the pipeline: how a task checks the state a
    conversation left (not part of any conversation, not counted)."""
    result = await runtime.gateway.upstreams[server].call_tool(tool, arguments, timeout=60)
    if not isinstance(result, types.CallToolResult) or result.is_error or result.structured_content is None:
        raise AssertionError(f"reading back {server}.{tool} failed: {result}")
    return dict(result.structured_content)


def sole_leader(counts: collections.Counter[str], what: str) -> str:
    """The most frequent key of a generated truth; a tie is refused (an answer would be a coin toss)."""
    ranking = counts.most_common(2)
    if not ranking or (len(ranking) > 1 and ranking[0][1] == ranking[1][1]):
        raise ValueError(f"no single {what} leads ({ranking}): pick another seed or size")
    return ranking[0][0]


def pick(hits: list[str], wanted: str) -> str:
    """The hit a model would take from a find_tools answer: the one that does the job, if it was found."""
    if wanted not in hits:
        raise AssertionError(f"find_tools did not offer {wanted} (it offered {hits})")
    return wanted
