"""The gateway's typed events (events.py): one bus, classes not strings, subscribers isolated.

The end-to-end case runs a real upstream process behind an in-process gateway and checks what
each subscriber hears: state changes, list reads, the aggregated list change, the call that
finished, a config reload; and that the server's own announcement (list_changed) is told apart
from the gateway re-reading on its own.
"""

from __future__ import annotations

import logging

import pytest

from lifecycle.faults import document, faulty
from mcp_nexus.config.config_applied import ConfigApplied
from mcp_nexus.config.load import config_from_document
from mcp_nexus.events import (
    EventBus,
    ListChanged,
    ResourceUpdated,
    ServerAnnouncedChange,
    ServerListRead,
    ServerStateChanged,
)
from mcp_nexus.pipeline.call import Caller
from mcp_nexus.pipeline.call_finished import CallFinished
from mcp_nexus.runtime import Runtime, RuntimeOptions
from support.polling import eventually


def test_handlers_get_only_their_class_in_order_and_one_failure_stops_no_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = EventBus()
    heard: list[str] = []

    def broken(event: ListChanged) -> None:
        raise RuntimeError("a subscriber's bug")

    bus.subscribe(ListChanged, lambda event: heard.append(f"first {event.kind}"))
    bus.subscribe(ListChanged, broken)
    stop = bus.subscribe(ListChanged, lambda event: heard.append(f"last {event.kind}"))
    bus.subscribe(ResourceUpdated, lambda event: heard.append(f"uri {event.uri}"))
    with caplog.at_level(logging.ERROR):
        bus.publish(ListChanged("tools"))
    assert heard == ["first tools", "last tools"]
    assert "ListChanged subscriber failed" in caplog.text
    stop()
    stop()  # twice is harmless
    bus.publish(ResourceUpdated("memo://a"))
    bus.publish(ListChanged("prompts"))
    assert heard == ["first tools", "last tools", "uri memo://a", "first prompts"]
    assert bus.wants(ListChanged) and not bus.wants(CallFinished)


def demo(**fields: object) -> dict[str, object]:
    """tests/support/demo_server.py over stdio: its `grow` tool adds a tool and announces it."""
    return faulty("f") | {"args": ["-m", "support.demo_server", "f"], **fields}


async def test_a_gateway_tells_each_subscriber_what_happened() -> None:
    config, _ = config_from_document(document({"f": demo()}))
    runtime = Runtime(config, RuntimeOptions(http=False, bridge=False, watch=False, wait_ready=False))
    events = runtime.gateway.events
    states: list[tuple[str, str]] = []
    reads: list[tuple[str, str]] = []
    lists: list[str] = []
    calls: list[CallFinished] = []
    announced: list[tuple[str, str]] = []
    reloads: list[ConfigApplied] = []
    events.subscribe(ServerStateChanged, lambda e: states.append((e.upstream.name, str(e.upstream.state))))
    events.subscribe(ServerListRead, lambda e: reads.append((e.upstream.name, e.kind)))
    events.subscribe(ListChanged, lambda e: lists.append(e.kind))
    events.subscribe(CallFinished, calls.append)
    events.subscribe(ServerAnnouncedChange, lambda e: announced.append((e.upstream.name, e.lists)))
    events.subscribe(ConfigApplied, reloads.append)
    async with runtime:
        gateway = runtime.gateway
        await eventually(lambda: "f.echo" in gateway.catalog.tools, timeout=15, what="f's tools")
        assert ("f", "READY") in states
        assert ("f", "tools") in reads and "tools" in lists
        assert announced == []  # the gateway's own first read is no announcement

        caller = Caller("api", "events-test")
        await gateway.call_tool("f.echo", {"text": "hi"}, caller=caller)
        with pytest.raises(Exception, match="Unknown tool"):
            await gateway.call_tool("f.nope", {}, caller=caller)
        assert [(c.name, c.caller.client, c.error is None) for c in calls[:2]] == [
            ("f.echo", "events-test", True),
            ("f.nope", "events-test", False),
        ]
        assert calls[1].error is not None and "Unknown tool" in calls[1].error
        assert all(c.seconds >= 0 for c in calls)

        # The server announces a change (list_changed): heard as such, then re-read.
        await gateway.call_tool("f.grow", {"name": "grown_one"}, caller=caller)
        await eventually(lambda: ("f", "tools") in announced, timeout=10, what="the announcement")

        await eventually(lambda: "f.grown_one" in gateway.catalog.tools, timeout=10, what="the grown tool")
        new, _ = config_from_document(document({"f": demo()}, metrics_window=50))
        await gateway.reload(new)
        assert len(reloads) == 1 and reloads[0].new.gateway.metrics_window == 50
    assert ("f", "STOPPED") in states
