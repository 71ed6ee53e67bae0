"""Issue 12 items 1, 3 and 13 on `nexus serve --stdio`: one bad line never takes the gateway down.

Each case sends one line, then a ping: the ping must be answered (the process lives and reads
on), the line must earn exactly what JSON-RPC says (expectations.py), and every line on
stdout must be valid JSON.
"""

from __future__ import annotations

import pytest

from robustness.expectations import CASES_BY_NAME, MALFORMED_CASES, Case, line
from robustness.gateways import ECHO_TOOL
from robustness.stdio_checks import exchange
from robustness.stdio_client import StdioGateway
from robustness.wire import is_answer


@pytest.mark.parametrize("case", MALFORMED_CASES, ids=[case.name for case in MALFORMED_CASES])
def test_malformed_line_gets_the_right_answer_and_the_gateway_lives(
    stdio_gateway: StdioGateway, case: Case
) -> None:
    # Requests that carry a usable id are waited for by id (a tools/call may finish after the ping).
    answers = exchange(stdio_gateway, case.raw, wait_for=case.expect.required_ids, one_of=case.expect.due_ids)
    case.expect.check(answers)
    # and the gateway still relays calls
    echoed = stdio_gateway.request("tools/call", {"name": ECHO_TOOL, "arguments": {"after": case.name}})
    assert "result" in echoed and echoed["result"]["isError"] is False, echoed


def test_lone_surrogate_result_is_valid_json_and_keeps_the_text(stdio_gateway: StdioGateway) -> None:
    """Issue 12 item 3: a lone surrogate in an upstream's result is answered as valid JSON."""
    answers = exchange(
        stdio_gateway, CASES_BY_NAME["lone-surrogate-in-result"].raw, wait_for=("surr-result",)
    )
    (answer,) = answers
    if "result" in answer:  # escaped (\ud800) or replaced (U+FFFD): either way the text is there
        text = answer["result"]["content"][0]["text"]
        assert text.startswith("broken ") and text.endswith(" text"), answer
    else:
        assert answer["error"]["message"], answer


def test_every_malformed_line_in_a_row_leaves_one_process_that_still_answers(
    stdio_gateway: StdioGateway,
) -> None:
    """All reproductions back to back on one process, then a call: nothing may have killed it."""
    pid = stdio_gateway.proc.pid
    mark = stdio_gateway.mark()
    for case in MALFORMED_CASES:
        stdio_gateway.send_line(case.raw)
    echoed = stdio_gateway.request("tools/call", {"name": ECHO_TOOL, "arguments": {"n": 1}}, timeout=20)
    assert echoed["result"]["content"][0]["text"] == '{"n":1}', echoed
    assert stdio_gateway.alive and stdio_gateway.proc.pid == pid, stdio_gateway.death_note()
    assert not stdio_gateway.problems_since(mark)
    answered = [a for a in stdio_gateway.answers_since(mark) if is_answer(a)]
    expected_at_most = sum(1 for case in MALFORMED_CASES if case.expect.answered) + 1
    assert len(answered) <= expected_at_most, answered


def test_a_valid_request_after_garbage_on_the_same_line_boundary(stdio_gateway: StdioGateway) -> None:
    """A bad line must not swallow the next good one (the reader resynchronises on newlines)."""
    mark = stdio_gateway.mark()
    stdio_gateway.send_line(b"\x00\x01\x02 not json at all \xff")
    stdio_gateway.send_line(line({"jsonrpc": "2.0", "id": "right-after", "method": "tools/list"}))
    answer = stdio_gateway.wait_for("right-after", mark=mark)
    assert "result" in answer and any(t["name"] == ECHO_TOOL for t in answer["result"]["tools"]), answer
