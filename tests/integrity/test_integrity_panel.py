"""The dashboard's tool-integrity panel: shipped, referenced by the page, valid JavaScript,
and reading the same admin routes the CLI uses."""

from __future__ import annotations

import shutil
import subprocess
from importlib import resources

import httpx2
import pytest

from support.gateway import running

STATIC = resources.files("mcp_nexus.frontends.dashboard") / "static"


def test_the_panel_script_is_valid_javascript_and_uses_the_integrity_routes() -> None:
    script = STATIC / "integrity.js"
    text = script.read_text(encoding="utf-8")
    assert "/api/integrity/approve" in text and '"/api/integrity"' in text
    assert "innerHTML" not in text  # definitions are server-controlled text: only textContent
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    checked = subprocess.run([node, "--check", str(script)], capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stderr


async def test_the_page_loads_the_panel() -> None:
    document = {"gateway": {"include_builtins": False}, "servers": {}}
    async with running(document, http=True) as runtime:
        base = runtime.url.removesuffix("/mcp")
        async with httpx2.AsyncClient(base_url=base, timeout=10) as http:
            page = await http.get("/")
            assert page.status_code == 200
            assert '<script src="/ui/static/integrity.js" defer></script>' in page.text
            assert 'id="integrity-panel"' in page.text
            served = await http.get("/ui/static/integrity.js")
            assert served.status_code == 200 and "Approve" in served.text
            status = (await http.get("/api/integrity")).json()
            assert status["pending"] == [] and status["quarantined"] == 0
