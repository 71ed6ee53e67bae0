"""Black box: two MCP clients of ONE `nexus serve` over HTTP, each with its own clientInfo name.

Each reads its own offloaded results through python_sandbox without naming `files`, and
neither can read the other's, by name in `files`, by name in the code, or by listing /data.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client

from support.served_gateway import served

FILE = re.compile(r"Saved to file (tool_output_[0-9a-f]{32}\.json)")


def config(tmp_path: Path) -> Path:
    path = tmp_path / "nexus.json"
    document = {
        "gateway": {"include_builtins": False, "offload_dir": str(tmp_path / "offload"), "rate_limit": None},
        "servers": {
            "gov": {
                "transport": "embedded",
                "module": "support.governance_server:create_server",
                "options": {"instance": "gov"},
            }
        },
    }
    path.write_text(json.dumps(document))
    return path


def text(result: types.CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, types.TextContent)
    return first.text


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_two_clients_each_read_only_their_own_offloads(tmp_path: Path, mode: str) -> None:
    with served(config(tmp_path), tmp_path) as gateway:
        url = f"{gateway.base}/mcp"
        alice_info = types.Implementation(name="alice", version="1.0")
        bob_info = types.Implementation(name="bob", version="1.0")
        async with (
            Client(url, client_info=alice_info, mode=mode) as alice,  # type: ignore[arg-type]
            Client(url, client_info=bob_info, mode=mode) as bob,  # type: ignore[arg-type]
        ):
            alert = text(await alice.call_tool("gov.big_list", {"items": 400}))
            alices = FILE.search(alert).group(1)  # type: ignore[union-attr]
            alert = text(await bob.call_tool("gov.big_list", {"items": 30, "pad": 300}))
            bobs = FILE.search(alert).group(1)  # type: ignore[union-attr]

            # the way a model writes it: the path in the code, no `files`
            own = await alice.call_tool(
                "python_sandbox",
                {"code": f"import json\nprint(len(json.load(open('/data/{alices}'))))"},
            )
            assert not own.is_error and text(own).strip() == "400", text(own)
            own = await bob.call_tool("python_sandbox", {"code": f"# {bobs}\nprint(len(data))"})
            assert not own.is_error and text(own).strip() == "30", text(own)

            # Bob reaching for Alice's file, three ways: refused, and nothing of hers comes back
            by_files = await bob.call_tool("python_sandbox", {"code": "print(data[:2])", "files": [alices]})
            by_code = await bob.call_tool("python_sandbox", {"code": f"print(open('/data/{alices}').read())"})
            listing = await bob.call_tool(
                "python_sandbox", {"code": "import os\nprint(os.listdir('/data'))", "files": [bobs]}
            )
            for refused in (by_files, by_code):
                assert refused.is_error and "does not exist among this client's offloaded files" in text(
                    refused
                )
                assert "light.room" not in text(refused)
            assert not listing.is_error and text(listing).strip() == repr([bobs])

            # and the other way round
            reverse = await alice.call_tool("python_sandbox", {"code": "print(len(data))", "files": [bobs]})
            assert reverse.is_error and "does not exist" in text(reverse)

            # `data` without any name: told exactly what to pass, with this client's own file
            bare = await bob.call_tool("python_sandbox", {"code": "print(len(data))"})
            assert bare.is_error and f'files: ["{bobs}"]' in text(bare) and alices not in text(bare)

    owners = {name: (tmp_path / "offload" / f".{name}.owner").read_text().split() for name in (alices, bobs)}
    assert owners == {alices: ['"http:alice"'], bobs: ['"http:bob"']}
