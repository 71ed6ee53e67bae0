"""The checks shared by the stdio tests: one malformed line with a sentinel, and one fuzz example."""

from __future__ import annotations

import time
from typing import Any

from robustness.stdio_client import StdioGateway
from robustness.strategies import Draft, Renderer
from robustness.wire import StreamLedger, classify, id_key

ANSWER_TIMEOUT = 5.0  # the echo upstream answers in milliseconds: 5 s means "never"
SETTLE = 0.05  # after the sentinel is answered, a moment for a stray late line to show up


def exchange(
    gateway: StdioGateway, raw: bytes, *, wait_for: tuple[Any, ...] = (), one_of: tuple[Any, ...] = ()
) -> list[dict[str, Any]]:
    """Send `raw`, then a sentinel ping; return the answers `raw` earned.

    `wait_for`: ids that must be answered (a tools/call may finish after the ping).
    `one_of`: ids of which one answer is due (None for a null id): waited for too, so that a
    late answer is counted here and never spills into the next test.
    """
    mark = gateway.mark()
    gateway.send_line(raw)
    for request_id in wait_for:
        gateway.wait_for(request_id, mark=mark, timeout=ANSWER_TIMEOUT)
    sentinel = gateway.sentinel(timeout=ANSWER_TIMEOUT)
    due = {id_key(i) for i in one_of}
    late = tuple(i for i in one_of if i is not None)  # a null-id error is never later than the ping
    if late and not any(id_key(a.get("id")) in due for a in gateway.answers_since(mark)):
        gateway.wait_for_any(late, mark=mark, timeout=ANSWER_TIMEOUT)
    time.sleep(SETTLE)
    assert gateway.alive, gateway.death_note()
    problems = gateway.problems_since(mark)
    assert not problems, f"invalid output on stdout: {problems}"
    return [a for a in gateway.answers_since(mark) if a.get("id") != sentinel]


class FuzzRun:
    """One fuzz test against one long-lived process; remembers what the last example sent."""

    def __init__(self, gateway: StdioGateway) -> None:
        self.gateway = gateway
        self.renderer = Renderer("fz")
        self.last_sent = "(nothing yet)"
        self.ledger = StreamLedger()

    def example(self, drafts: list[Draft]) -> None:
        gateway = self.gateway
        # Hypothesis replays a failing example to report it: by then the gateway may be dead.
        assert gateway.alive, f"{gateway.death_note()}\nthe example that killed it sent:\n{self.last_sent}"
        mark = gateway.mark()
        lines = [self.renderer.render(draft) for draft in drafts]
        sent = [classify(line) for line in lines]
        shown = "\n".join(repr(line[:300]) for line in lines)
        self.last_sent = shown
        for line in lines:
            gateway.send_line(line)
        for message in sent:
            if message.kind == "request":
                gateway.wait_for(message.id, mark=mark, timeout=ANSWER_TIMEOUT)
        sentinel = gateway.sentinel(timeout=ANSWER_TIMEOUT)
        assert gateway.alive, f"{gateway.death_note()}\nafter sending:\n{shown}"
        problems = gateway.problems_since(mark)
        assert not problems, f"invalid output {problems}\nafter sending:\n{shown}"
        answers = [a for a in gateway.answers_since(mark) if a.get("id") != sentinel]
        verdict = self.ledger.judge(sent, answers)
        assert not verdict.problems, f"{verdict.problems}\nanswers: {answers}\nafter sending:\n{shown}"
