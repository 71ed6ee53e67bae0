"""The id of a message too large to parse, from its first bytes (jsonrpc/leading_id.py)."""

from __future__ import annotations

import pytest

from mcp_nexus.jsonrpc.leading_id import answered_id, request_id


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"xxxx', 7),  # the Python SDK
        (b'{"id": 12, "jsonrpc": "2.0", "error": {"code": -1, "message": "xxxx', 12),
        (b'  { "jsonrpc" : "2.0" , "id" : "call-\\"9\\"" , "result":', 'call-"9"'),
        (b'{"jsonrpc":"2.0","id":-3,"result":"' + b"x" * 300, -3),  # a long string: the large member
    ],
)
def test_an_answer_whose_id_leads_is_read(prefix: bytes, expected: object) -> None:
    assert answered_id(prefix) == expected


@pytest.mark.parametrize(
    "prefix",
    [
        b'{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{"messages":[',  # its own request
        b'{"jsonrpc":"2.0","method":"notifications/message","params":{"id":5,"data":"xx',  # a param's id
        b'{"result":{"content":[]},"jsonrpc":"2.0","id":4}',  # the id after the large member
        b'{"jsonrpc":"2.0","id":null,"error":{',  # no request to fail
        b'{"jsonrpc":"2.0","id":1.5,"result":',  # not an id
        b'{"jsonrpc":"2.0","id":true,"result":',
        b'{"jsonrpc":"2.0","id":"unterminated',
        b'{"jsonrpc":"2.0","id":3',  # cut before the large member: nothing proves an answer
        b"xxxxxxxx",
        b"",
    ],
)
def test_anything_else_is_no_answer(prefix: bytes) -> None:
    assert answered_id(prefix) is None


def test_a_request_whose_id_and_method_lead_is_read() -> None:
    assert request_id(b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"arguments":{"t":"xx') == 8
    assert request_id(b'{"method":"tools/call","id":"a","params":{') == "a"
    assert request_id(b'{"jsonrpc":"2.0","method":"notifications/x","params":{"id":2') is None  # a param's
    assert request_id(b'{"jsonrpc":"2.0","id":8,"params":{"a":1},"method":"x"}') is None  # method after
    assert request_id(b'{"jsonrpc":"2.0","id":8,"result":{') is None  # an answer
