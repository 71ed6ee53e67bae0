"""The secret redactor built from a loaded config, and upstream stderr going through it (issue 12 item 7)."""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path
from urllib.parse import quote

import pytest

from mcp_nexus.config.load import load_config
from mcp_nexus.config.secrets import MIN_SECRET_CHARS, SecretRedactor, mask_url_credentials, url_credentials
from mcp_nexus.upstream.stderr_log import StderrForwarder

BASIC_PASSWORD = "basic-Pw-2024"


def loaded(tmp_path: Path, env: dict[str, str]):  # type: ignore[no-untyped-def]
    doc = {
        "gateway": {"include_builtins": False, "token": "gw-token-123456"},
        "mcpServers": {
            "remote": {
                "type": "http",
                "url": "https://bot:url-pass-789@h.test/mcp?sig=sig-abcdef012&v=1",
                "headers": {
                    "Authorization": "Bearer bearer-tok-42424242",
                    "Cookie": "a=cookie-val-1357; b=xy",
                    "Proxy-Authorization": "Basic "
                    + base64.b64encode(f"me:{BASIC_PASSWORD}".encode()).decode(),
                    "X-From-Env": "${HEADER_SECRET}",
                },
                "apiKey": "apikey-5555-6666",
            },
            "tool": {
                "command": "srv",
                "args": ["--token", "argtok-24680", "--secret=argsec-13579", "--path", "/srv/data-folder"],
                "env": {
                    "GITHUB_PAT": "ghp-pat-000111",
                    "DATABASE_URL": "postgres://app:db%40pass-99@db/app",
                    "PYTHONPATH": "/opt/some/library",
                    "SHORT": "abc12",
                },
            },
        },
        "xiaozhi": {"endpoints": ["wss://x.test/mcp/?token=xz-token-8888"]},
    }
    path = tmp_path / "nexus.json"
    path.write_text(json.dumps(doc))
    config, _ = load_config(path, env)
    return config


SECRETS = [
    "gw-token-123456",
    "url-pass-789",
    "sig-abcdef012",
    "bearer-tok-42424242",
    "cookie-val-1357",
    BASIC_PASSWORD,
    "from-env-7777777",
    "apikey-5555-6666",
    "argtok-24680",
    "argsec-13579",
    "ghp-pat-000111",
    "db@pass-99",
    "xz-token-8888",
]


def test_every_configured_secret_is_redacted(tmp_path: Path) -> None:
    redactor = SecretRedactor.from_config(loaded(tmp_path, {"HEADER_SECRET": "from-env-7777777"}))
    text = " | ".join(SECRETS)
    redacted = redactor.redact(text)
    assert [s for s in SECRETS if s in redacted] == []
    assert redacted.count("***") == len(SECRETS)
    # what is not a secret stays readable: paths of PATH-like variables, short values, flag names
    kept = "PYTHONPATH=/opt/some/library SHORT=abc12 --path /srv/data-folder --token"
    assert redactor.redact(kept) == kept
    assert redactor.ignored >= 1  # "abc12" (under MIN_SECRET_CHARS) and short query values like v=1


def test_encoded_forms_are_found_too(tmp_path: Path) -> None:
    redactor = SecretRedactor(["p@ss/word+1", 'quote"d\\secret'])
    assert redactor.redact(f"url=https://h/?k={quote('p@ss/word+1', safe='')}") == "url=https://h/?k=***"
    assert redactor.redact(json.dumps({"v": 'quote"d\\secret'})) == '{"v": "***"}'


def test_long_secrets_keep_their_last_four_characters_and_nesting_is_safe() -> None:
    redactor = SecretRedactor(["abcdefghijklmnopqrstuvwxyz", "klmnop"])
    assert redactor.redact("x abcdefghijklmnopqrstuvwxyz y klmnop") == "x ***wxyz y ***"


def test_values_too_short_to_be_secrets_are_ignored() -> None:
    redactor = SecretRedactor(["12345", "on", "x" * MIN_SECRET_CHARS])
    assert redactor.ignored == 2 and redactor.count == 1
    assert redactor.redact("12345 on xxxxxx") == "12345 on ***"
    assert not SecretRedactor([]) and SecretRedactor([]).redact("anything") == "anything"


def test_url_credentials_and_their_masking() -> None:
    url = "https://bot:p%40ss@h.test:8443/mcp?sig=abc&x="
    assert set(url_credentials(url)) == {"bot:p%40ss", "bot:p@ss", "p%40ss", "p@ss", "abc"}
    assert mask_url_credentials(url) == "https://***@h.test:8443/mcp?sig=***&x="
    assert url_credentials("https://TOKEN-as-user@h.test/") == ["TOKEN-as-user", "TOKEN-as-user"]
    assert mask_url_credentials("not a url") == "not a url"


async def test_stderr_lines_are_redacted_before_logging_and_last_words(
    caplog: pytest.LogCaptureFixture,
) -> None:
    forwarder = StderrForwarder("leaky", SecretRedactor(["tok-SECRET-123456"]))
    with caplog.at_level(logging.INFO, logger="mcp_nexus.upstream.stderr"):
        forwarder.writer.write("API_TOKEN=tok-SECRET-123456\nfatal: tok-SECRET-123456 refused\n")
        forwarder.writer.flush()
        forwarder.close_parent_end()
        assert await forwarder.wait_drained(5)
    assert "tok-SECRET-123456" not in caplog.text
    assert "[leaky] API_TOKEN=***3456" in caplog.text  # 16+ characters: the last 4 tell two apart
    assert forwarder.last_words() == "fatal: ***3456 refused"
    assert forwarder.lines_seen == 2


async def test_a_secret_past_the_cut_of_last_words_is_still_redacted() -> None:
    secret = "s" * 20 + "-tail-secret"
    forwarder = StderrForwarder("long", SecretRedactor([secret]))
    forwarder.writer.write("x" * 490 + secret + "\n")
    forwarder.writer.flush()
    forwarder.close_parent_end()
    assert await forwarder.wait_drained(5)
    assert secret[:10] not in forwarder.last_words()


async def test_without_a_redactor_lines_pass_unchanged() -> None:
    forwarder = StderrForwarder("plain")
    forwarder.writer.write("hello token-abcdef\n")
    forwarder.writer.flush()
    forwarder.close_parent_end()
    assert await forwarder.wait_drained(5)
    assert forwarder.last_words() == "hello token-abcdef"
