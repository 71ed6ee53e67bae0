"""The redact step's shape rules (pipeline/steps/redaction.py): what each kind must find and must leave alone."""

from __future__ import annotations

import pytest

from mcp_nexus.pipeline.steps.redaction import KINDS, luhn_valid, redact_text, valid_cn_id

FOUND = [
    ("private_key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----"),
    ("private_key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----"),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    ("api_key", "sk-proj-abcdefghijklmnopqrstuvwxyz012345"),
    ("api_key", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123"),
    ("api_key", "ghp_" + "a1B2" * 9),
    ("api_key", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop"),
    ("api_key", "AKIAIOSFODNN7EXAMPLE"),
    ("api_key", "AIza" + "SyA-1234567890abcdefghijklmnopqrstu"),
    ("api_key", "xoxb-123456789012-abcdefghijkl"),
    ("api_key", "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"),
    ("api_key", "glpat-abcdefghij0123456789"),
    ("bearer_token", "Authorization: Bearer abcdefghijklmnop.qrstuv"),
    ("credential", 'api_key="s3cr3t-value-123"'),
    ("credential", "password: hunter2hunter2"),
    ("credential", '{"token": "abcd1234efgh5678"}'),
    ("cn_id", "11010519491231002X"),
    ("cn_id", "身份证号 440524188001010014。"),
    ("card", "4111 1111 1111 1111"),
    ("card", "5500-0000-0000-0004"),
    ("email", "li.lei@example.com.cn"),
    ("email", "联系 zhang_san+news@mail.example.org 谢谢"),
    ("phone", "13800138000"),
    ("phone", "手机:19912345678"),
    ("phone", "+86 138 0013 8000"),
    ("phone", "+8613800138000"),
    ("phone", "0086-13800138000"),
    ("phone", "010-12345678"),
    ("phone", "0755-1234567"),
    ("phone", "+1 415 555 2671"),
    ("phone", "+44 20 7946 0958"),
]

LEFT_ALONE = [
    "110105194912310021",  # 18 digits, checksum wrong: not a resident ID
    "4111 1111 1111 1112",  # Luhn fails
    "12800138000",  # 12x is no mobile prefix
    "order 138001380001",  # 12 digits: no phone number
    "version 1.2.3 released 2024-01-01",
    "sk-short",
    "the token is short",
    "password: abc",  # under 8 characters
    "user@localhost",  # no domain
    "Bearer short",
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "uuid 123e4567-e89b-12d3-a456-426614174000",
    "call +1 23",  # too few digits
]


@pytest.mark.parametrize(("kind", "text"), FOUND)
def test_each_kind_is_found_and_replaced(kind: str, text: str) -> None:
    redacted, found = redact_text(text)
    assert dict(found) == {kind: 1}, redacted
    assert f"[REDACTED:{kind}]" in redacted


@pytest.mark.parametrize("text", LEFT_ALONE)
def test_look_alikes_are_left_alone(text: str) -> None:
    assert redact_text(text) == (text, {})


def test_only_the_kinds_asked_for() -> None:
    text = "mail a.b@example.com phone 13800138000"
    redacted, found = redact_text(text, frozenset({"phone"}))
    assert redacted == "mail a.b@example.com phone [REDACTED:phone]"
    assert dict(found) == {"phone": 1}


def test_every_kind_has_a_case_in_the_table() -> None:
    assert {kind for kind, _ in FOUND} == set(KINDS)


def test_checks() -> None:
    assert valid_cn_id("11010519491231002X") and not valid_cn_id("110105194912310021")
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")
