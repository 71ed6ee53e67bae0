"""The `redact` guardrail step through a running gateway: per gateway, server and tool; `on`
replaces, `report` only counts; arguments are redacted before the server sees them; off by
default; counted on /metrics without the values."""

from __future__ import annotations

from typing import Any

import httpx2

from support.gateway import running, running_gateway

DEMO = {"transport": "embedded", "module": "support.demo_server:create_server"}
SECRET_TEXT = "mail li.lei@example.cn or call +86 138 0013 8000"


def _text(result: Any) -> str:
    return "\n".join(item.text for item in result.content if item.type == "text")


async def test_results_redacted_per_server_and_report_only_for_one_tool() -> None:
    doc = {
        "gateway": {"include_builtins": False},
        "servers": {
            "a": {**DEMO, "steps": {"redact": {"results": "on"}}},
            "b": {
                **DEMO,
                "steps": {"redact": {"results": "on"}},
                "tool_config": {"echo": {"steps": {"redact": {"results": "report"}}}},
            },
        },
    }
    async with running_gateway(doc) as gateway:
        redacted = await gateway.call_tool("a.echo", {"text": SECRET_TEXT})
        reported = await gateway.call_tool("b.echo", {"text": SECRET_TEXT})
        step = next(s for s in gateway.governance.tool_steps if type(s).__name__ == "RedactStep")
    assert _text(redacted) == "demo: mail [REDACTED:email] or call [REDACTED:phone]"
    assert _text(reported) == f"demo: {SECRET_TEXT}"
    assert dict(step.counts) == {
        ("email", "results", "on", "a"): 1,
        ("phone", "results", "on", "a"): 1,
        ("email", "results", "report", "b"): 1,
        ("phone", "results", "report", "b"): 1,
    }


async def test_arguments_are_redacted_before_the_server_sees_them() -> None:
    doc = {
        "gateway": {"include_builtins": False, "steps": {"redact": {"arguments": "on", "kinds": ["cn_id"]}}},
        "servers": {"a": DEMO},
    }
    async with running_gateway(doc) as gateway:
        result = await gateway.call_tool("a.echo", {"text": "id 11010519491231002X, mail x@example.com"})
    # the echo server answers what it received: the ID never reached it; e-mail was not asked for
    assert _text(result) == "demo: id [REDACTED:cn_id], mail x@example.com"


async def test_off_by_default_and_left_out_of_the_chain() -> None:
    doc = {"gateway": {"include_builtins": False}, "servers": {"a": DEMO}}
    async with running_gateway(doc) as gateway:
        result = await gateway.call_tool("a.echo", {"text": SECRET_TEXT})
        policy = gateway.governance.policies.resolve("a.echo")
        step = next(s for s in gateway.governance.tool_steps if type(s).__name__ == "RedactStep")
        assert policy is not None and not step.applies_to(policy)
    assert _text(result) == f"demo: {SECRET_TEXT}"
    assert not step.counts


async def test_redactions_are_counted_on_metrics_without_the_values() -> None:
    doc = {
        "gateway": {"include_builtins": False, "steps": {"redact": {"results": "on"}}},
        "servers": {"a": DEMO},
    }
    async with running(doc, http=True) as runtime:
        await runtime.gateway.call_tool("a.echo", {"text": SECRET_TEXT})
        base = runtime.url.removesuffix("/mcp")
        async with httpx2.AsyncClient() as client:
            body = (await client.get(base + "/metrics")).text
    assert 'nexus_redactions_total{kind="email",mode="on",server="a",where="results"} 1.0' in body
    assert 'nexus_redactions_total{kind="phone",mode="on",server="a",where="results"} 1.0' in body
    assert "li.lei" not in body and "138 0013 8000" not in body and "13800138000" not in body
