"""The offload alert names python_sandbox only to a caller whose profile reaches it; a caller whose
profile leaves it out is told the result was saved and only a preview is shown. Also when the
alert is served from the cache to a caller of the other profile."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_nexus.identity.principal import Principal
from mcp_nexus.pipeline.call import Caller
from support.gateway import running_gateway
from support.governance_gateway import document, embedded, text

PROFILES = {
    "coder": {"tools": ["gov.*", "python_sandbox"], "bind": {"users": ["alice"]}},
    "viewer": {"tools": ["gov.*"], "bind": {"users": ["bob"]}},
}
SAVED = "Saved to file tool_output_"
NO_SANDBOX = "no tool of this client can read that file, so only the preview below is shown"


def user(name: str) -> Caller:
    return Caller("http", "ide", principal=Principal("http://idp", name, "ide"))


@pytest.mark.parametrize("scope", [None, "public"])  # public: bob is served alice's cached alert
async def test_the_alert_follows_the_callers_profile(tmp_path: Path, scope: str | None) -> None:
    server = embedded(rate_limit=None, cache_ttl=60, **({"cache_scope": scope} if scope else {}))
    doc = {**document(tmp_path, {"gov": server}), "profiles": PROFILES}
    async with running_gateway(doc) as gw:
        alice = text(await gw.call_tool("gov.big_list", {"items": 400}, caller=user("alice")))
        bob = text(await gw.call_tool("gov.big_list", {"items": 400}, caller=user("bob")))
    assert SAVED in alice and "Use python_sandbox to read and filter." in alice.split("\n")[0]
    assert SAVED in bob and NO_SANDBOX in bob.split("\n")[0]
    assert "python_sandbox" not in bob
