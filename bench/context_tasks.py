"""The context benchmark's multi-step tasks, each done four ways over a real gateway, as a table.

    .venv/bin/python bench/context.py --tasks [lights git cortex] [--modes relay search offload code]

One gateway per way of working (context_conversation.gateway_document), serving every task's
server with fresh state: the Home-Assistant-like server (stdio), mcp-server-git (stdio) and Cortex
(embedded). The tasks run one after the other on it; each row is one scripted conversation.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any, Protocol

from context_conversation import MODE_LABELS, MODES, Conversation, Counter, running_gateway


class Task(Protocol):
    name: str
    question: str

    def servers(self, workdir: Path) -> dict[str, Any]: ...

    async def run(self, mode: str, chat: Conversation) -> tuple[bool, str]: ...


async def run_tasks(
    tasks: list[Task], counter: Counter, modes: tuple[str, ...] = MODES
) -> list[dict[str, Any]]:
    """Every task in every mode; a script that fails is a wrong answer with its reason, not a crash."""
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        raise ValueError(f"unknown mode(s) {unknown}: choose among {', '.join(MODES)}")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="nexus-context-tasks-") as tmp:
        for mode in modes:
            workdir = Path(tmp) / mode
            servers: dict[str, Any] = {}
            for task in tasks:
                (workdir / type(task).__name__).mkdir(parents=True)
                servers.update(task.servers(workdir / type(task).__name__))
            async with running_gateway(mode, servers) as runtime:
                for task in tasks:
                    chat = Conversation(runtime, counter, task.question)
                    try:
                        correct, answer = await task.run(mode, chat)
                    except AssertionError as exc:
                        correct, answer = False, f"script failed: {reason(exc)}"
                    rows.append(chat.row(task.name, mode, correct, answer))
    return rows


def reason(failure: Exception) -> str:
    """One line for the table: the exception a traceback ends with, else the first line."""
    lines = [line.strip() for line in str(failure).splitlines() if line.strip()]
    raised = [line for line in lines if re.match(r"^[\w.]+(Error|Exception): ", line)]
    return (raised[-1] if raised else lines[0] if lines else type(failure).__name__)[:240]


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table (the one docs/PERFORMANCE.md and README.md show)."""
    lines = [
        "| task | way | context tokens (last turn) | input tokens (all turns) | written tokens | model turns | tool calls (model + from code) | wall s | correct |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        calls = f"{row['tool_calls']}" + (f" + {row['calls_from_code']}" if row["calls_from_code"] else "")
        lines.append(
            f"| {row['task']} | {row['mode']} | {row['context_tokens']:,} | {row['input_tokens']:,} | "
            f"{row['written_tokens']:,} | {row['turns']} | {calls} | {row['wall_s']:.1f} | "
            f"{'yes' if row['correct'] else 'NO'}: {row['answer']} |"
        )
    return "\n".join(lines)


__all__ = ["MODE_LABELS", "Task", "run_tasks", "table"]
