"""The audit log of a serving gateway names the token's user for tool calls and admin actions."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
from oidc_peer import ACCEPT, Idp, initialize

from lifecycle.faults import document, faulty
from mcp_nexus.audit.chain import log_files, verify
from mcp_nexus.config.load import config_from_document
from mcp_nexus.runtime import Runtime, RuntimeOptions
from support.processes import free_port


async def test_calls_and_admin_actions_are_recorded_with_the_user(tmp_path: Path, idp: Idp) -> None:
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    auth = {"resource": resource, "issuer": idp.issuer, "admin_scope": "nexus:admin"}
    audit = {"dir": str(tmp_path)}
    config, _ = config_from_document(document({"f": faulty("f")}, port=port, auth=auth, audit=audit))
    user = idp.token("alice", resource=resource)
    admin = idp.token("admin", scope="nexus:admin", resource=resource)
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "f.echo", "arguments": {"text": "x"}},
    }
    async with Runtime(config, RuntimeOptions(bridge=False, watch=False, wait_ready=True)) as runtime:
        async with httpx2.AsyncClient(timeout=30, headers={"Authorization": f"Bearer {user}"}) as client:
            opened = await client.post(runtime.url, headers=ACCEPT, json=initialize("ide"))
            session = {
                **ACCEPT,
                "Mcp-Session-Id": opened.headers["mcp-session-id"],
                "Mcp-Protocol-Version": "2025-11-25",
            }
            await client.post(
                runtime.url, headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"}
            )
            assert (await client.post(runtime.url, headers=session, json=call)).status_code == 200
            unknown = {**call, "id": 2, "params": {"name": "f.nope"}}
            await client.post(runtime.url, headers=session, json=unknown)
        base = f"http://127.0.0.1:{port}"
        async with httpx2.AsyncClient(timeout=30) as client:
            cleared = await client.post(
                f"{base}/api/cache/clear", headers={"Authorization": f"Bearer {admin}"}, json={}
            )
        assert cleared.status_code == 200, cleared.text
    records = [json.loads(line) for path in log_files(tmp_path) for line in path.read_bytes().splitlines()]
    assert verify(tmp_path).ok
    calls = [r for r in records if r["kind"] == "tool_call"]
    assert [(r["who"], r["client"], r["tool"], r["outcome"]) for r in calls] == [
        ("user:alice", "ide", "f.echo", "ok"),
        ("user:alice", "ide", "f.nope", "error"),
    ]
    assert calls[1]["error_class"] and calls[0]["server"] == "f"
    [action] = [r for r in records if r["kind"] == "admin"]
    assert (action["who"], action["client_id"], action["action"], action["status"]) == (
        "user:admin",
        "admin",
        "POST /api/cache/clear",
        200,
    )
