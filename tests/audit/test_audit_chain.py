"""The audit log's chain: written by the real writer, then edited, cut, swapped and rotated on disk."""

from __future__ import annotations

import json
from pathlib import Path

import mcp_types as types
import pytest
from typer.testing import CliRunner

from mcp_nexus.audit.chain import HEAD_NAME, log_files, verify
from mcp_nexus.audit.writer import AuditLog
from mcp_nexus.cli.audit import app as audit_cli
from mcp_nexus.config.audit import AuditSettings
from mcp_nexus.events import EventBus
from mcp_nexus.identity.principal import Principal
from mcp_nexus.pipeline.call import Caller, ToolCall
from mcp_nexus.pipeline.call_finished import CallFinished

ALICE = Caller("http", client="agent", principal=Principal("http://idp", "alice", "alice-app"))


def finished(n: int, caller: Caller = ALICE) -> CallFinished:
    call = ToolCall("f.echo", {"text": f"secret {n}"}, caller)
    call.server = "f"
    result = types.CallToolResult(content=[types.TextContent(type="text", text="ok")])
    return CallFinished("f.echo", caller, 0.002, None, call=call, outcome=result)


async def write_log(folder: Path, count: int, **settings: object) -> AuditLog:
    bus = EventBus()
    log = AuditLog(AuditSettings(dir=str(folder), **settings), bus)  # type: ignore[arg-type]
    await log.start()
    for n in range(count):
        bus.publish(finished(n))
    await log.stop()
    return log


def rows(folder: Path) -> list[bytes]:
    [path] = log_files(folder)
    return path.read_bytes().splitlines(keepends=True)


def rewrite(folder: Path, lines: list[bytes]) -> None:
    [path] = log_files(folder)
    path.write_bytes(b"".join(lines))


async def test_an_intact_log_verifies_and_says_who_did_what(tmp_path: Path) -> None:
    await write_log(tmp_path, 3)
    verdict = verify(tmp_path)
    assert (verdict.ok, verdict.lines, verdict.files) == (True, 3, 1)
    first = json.loads(rows(tmp_path)[0])
    assert first["seq"] == 1 and first["prev"] == "0" * 64
    assert {k: first[k] for k in ("kind", "who", "subject", "client_id", "client", "frontend", "tool")} == {
        "kind": "tool_call",
        "who": "user:alice",
        "subject": "alice",
        "client_id": "alice-app",
        "client": "agent",
        "frontend": "http",
        "tool": "f.echo",
    }
    assert (first["server"], first["outcome"], first["latency_ms"]) == ("f", "ok", 2.0)
    assert "arguments" not in first and len(first["arguments_sha256"]) == 64  # no values by default
    assert b"secret" not in b"".join(rows(tmp_path))


async def test_values_are_recorded_only_when_the_setting_says_so(tmp_path: Path) -> None:
    await write_log(tmp_path, 1, arguments="values")
    assert json.loads(rows(tmp_path)[0])["arguments"] == {"text": "secret 0"}


async def test_an_edited_line_is_named(tmp_path: Path) -> None:
    await write_log(tmp_path, 5)
    lines = rows(tmp_path)
    lines[1] = lines[1].replace(b"user:alice", b"user:mallory")
    rewrite(tmp_path, lines)
    verdict = verify(tmp_path)
    name = log_files(tmp_path)[0].name
    assert not verdict.ok
    assert verdict.problem == f"{name} line 2 was edited: {name} line 3 carries another hash for it"


async def test_a_removed_line_is_named(tmp_path: Path) -> None:
    await write_log(tmp_path, 5)
    lines = rows(tmp_path)
    del lines[2]
    rewrite(tmp_path, lines)
    name = log_files(tmp_path)[0].name
    assert verify(tmp_path).problem == f"{name} line 3: seq 4 where 3 belongs (lines removed or reordered)"


async def test_swapped_lines_are_named(tmp_path: Path) -> None:
    await write_log(tmp_path, 5)
    lines = rows(tmp_path)
    lines[1], lines[3] = lines[3], lines[1]
    rewrite(tmp_path, lines)
    name = log_files(tmp_path)[0].name
    assert verify(tmp_path).problem == f"{name} line 2: seq 4 where 2 belongs (lines removed or reordered)"


async def test_the_last_line_is_checked_against_the_head(tmp_path: Path) -> None:
    await write_log(tmp_path, 3)
    lines = rows(tmp_path)
    name = log_files(tmp_path)[0].name
    rewrite(tmp_path, [*lines[:2], lines[2].replace(b'"ok"', b'"error"')])
    assert (
        verify(tmp_path).problem
        == f"{name} line 3: the last line does not match HEAD (it was edited, or lines added)"
    )
    rewrite(tmp_path, lines[:2])
    assert verify(tmp_path).problem == f"{name} line 2: the log ends at seq 2 but HEAD says 3 (lines removed)"
    rewrite(tmp_path, lines)
    (tmp_path / HEAD_NAME).unlink()
    assert verify(tmp_path).problem == "HEAD is missing: the last line cannot be checked"


async def test_rotation_keeps_one_chain_across_files_and_restarts(tmp_path: Path) -> None:
    await write_log(tmp_path, 40, max_file_bytes=4096)
    await write_log(tmp_path, 10, max_file_bytes=4096)  # a restart goes on from the last line
    files = log_files(tmp_path)
    verdict = verify(tmp_path)
    assert verdict.ok and verdict.lines == 50 and verdict.files == len(files) > 2
    assert all(path.stat().st_size < 4096 + 1024 for path in files)
    first_of_second = json.loads(files[1].read_bytes().splitlines()[0])
    last_of_first = files[0].read_bytes().splitlines()[-1]
    from mcp_nexus.audit.chain import line_hash

    assert first_of_second["prev"] == line_hash(last_of_first)
    files[1].unlink()  # a whole file removed from the middle
    problem = verify(tmp_path).problem
    assert problem is not None and problem.startswith(files[2].name + " line 1: seq ")


async def test_a_full_queue_drops_and_counts_never_waits(tmp_path: Path) -> None:
    bus = EventBus()
    log = AuditLog(AuditSettings(dir=str(tmp_path), queue_max=5), bus)
    await log.start()
    for n in range(50):  # all published before the writer runs once: the queue holds five
        bus.publish(finished(n))
    assert log.dropped == 45
    await log.stop()
    records = [json.loads(line) for line in rows(tmp_path)]
    assert [r["kind"] for r in records] == ["tool_call"] * 5 + ["dropped"]
    assert records[-1]["count"] == 45
    assert verify(tmp_path).ok


@pytest.mark.parametrize("broken", [False, True])
async def test_the_cli_verifies_tails_and_exports(tmp_path: Path, broken: bool) -> None:
    await write_log(tmp_path, 3)
    runner = CliRunner()
    if broken:
        lines = rows(tmp_path)
        lines[0] = lines[0].replace(b"f.echo", b"f.other")
        rewrite(tmp_path, lines)
        answer = runner.invoke(audit_cli, ["verify", "--dir", str(tmp_path)])
        assert answer.exit_code == 1
        assert answer.output.startswith("audit log broken: audit-000000000001.jsonl line 1 was edited")
        return
    answer = runner.invoke(audit_cli, ["verify", "--dir", str(tmp_path)])
    assert answer.exit_code == 0 and answer.output.startswith("audit log intact: 3 records in 1 files, head ")
    tail = runner.invoke(audit_cli, ["tail", "--dir", str(tmp_path), "-n", "2", "--json"])
    assert [r["seq"] for r in json.loads(tail.output)] == [2, 3]
    exported = runner.invoke(
        audit_cli, ["export", "--dir", str(tmp_path), "--format", "csv", "--who", "user:alice"]
    )
    header, *data = exported.output.splitlines()
    assert header.startswith("seq,time,kind,who,subject") and len(data) == 3
    none = runner.invoke(audit_cli, ["export", "--dir", str(tmp_path), "--who", "user:bob"])
    assert none.exit_code == 0 and none.output == ""


async def test_calls_one_after_another_share_a_batch_and_each_is_written_within_the_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client calling tools one after another must not cost a thread hop and a file append per
    call: records arriving within the batch window are written together, and none waits longer."""
    import asyncio

    from mcp_nexus.audit import writer

    batches: list[int] = []
    write_batch = AuditLog._write_batch

    def counting(self: AuditLog, batch: list[tuple[object, float]]) -> None:
        batches.append(len(batch))
        write_batch(self, batch)

    monkeypatch.setattr(AuditLog, "_write_batch", counting)
    bus = EventBus()
    log = AuditLog(AuditSettings(dir=str(tmp_path)), bus)
    await log.start()
    for n in range(20):  # one call after another, each a loop turn apart
        bus.publish(finished(n))
        await asyncio.sleep(0)
    await asyncio.sleep(writer.BATCH_WINDOW_S * 4)
    assert log.written == 20, "every record is on disk within the window, before any stop"
    assert sum(batches) == 20 and len(batches) <= 2, batches
    await log.stop()
    assert verify(tmp_path).ok
