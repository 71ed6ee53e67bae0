"""`nexus config check` masks secrets only: by key, by shape, in URLs and arguments (config/masking.py)."""

from __future__ import annotations

import pytest

from mcp_nexus.config.masking import MASK, Masker, is_secret_key, looks_like_secret, mask_url

# (key, value, what is shown)
CASES = [
    # plain values under plain keys are shown
    ("LOG_LEVEL", "debug", "debug"),
    ("TZ", "UTC", "UTC"),
    ("X-Trace", "on", "on"),
    ("cwd", "/srv/data", "/srv/data"),
    ("model", "qwen3-max", "qwen3-max"),
    ("NODE_OPTIONS", "--max-old-space-size=4096", "--max-old-space-size=4096"),
    ("PACKAGE", "@modelcontextprotocol/server-filesystem", "@modelcontextprotocol/server-filesystem"),
    ("VERSION", "mcp-server-filesystem-2025.1.14", "mcp-server-filesystem-2025.1.14"),
    ("LANG", "en_US.UTF-8", "en_US.UTF-8"),
    # a key that names a variable or a file is not the secret
    ("api_key_env", "NEXUS_LLM_API_KEY", "NEXUS_LLM_API_KEY"),
    ("TOKEN_FILE", "/run/secrets/token", "/run/secrets/token"),
    ("GITHUB_TOKEN_PATH", "/etc/gh", "/etc/gh"),
    ("key_prefix", "nexus", "nexus"),
    # secret by key
    ("token", "abc", MASK),
    ("api_key", "k3y", MASK),
    ("apiKey", "k3y", MASK),
    ("OPENAI_API_KEY", "abc", MASK),
    ("AWS_SECRET_ACCESS_KEY", "abc", MASK),
    ("DB_PASSWORD", "hunter2", MASK),
    ("Authorization", "Bearer abc", MASK),
    ("Proxy-Authorization", "Basic dXNlcjpwYXNz", MASK),
    ("Cookie", "session=1", MASK),
    ("X-API-Key", "abc", MASK),
    ("X-Auth-Token", "abc", MASK),
    ("GITHUB_PAT", "abc", MASK),
    ("client_secret", "abc", MASK),
    # secret by shape, under any key
    ("X", "sk-proj-abcdefghijklmnop1234", MASK),
    ("X", "sk-ant-api03-abcdefghijklmnopqrst", MASK),
    ("X", "ghp_abcdefghijklmnopqrstuvwxyz0123", MASK),
    ("X", "github_pat_11ABCDEFG0123456789_abcdefghij", MASK),
    ("X", "xoxb-1234567890-abcdefghij", MASK),
    ("X", "glpat-abcdefghijklmnop1234", MASK),
    ("X", "AKIAIOSFODNN7EXAMPLE", MASK),
    ("X", "AIzaSyA1234567890abcdefghijklmnopqrstu", MASK),
    ("X", "hf_abcdefghijklmnopqrstuvwxyz", MASK),
    ("X", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig-nature_x", MASK),
    ("X", "q8Zx3LmP0vN7tR2wK9yB4cD6", MASK),  # 24 random characters
    ("X", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", MASK),  # a hex key
    ("X", "Bearer sk-abcdefghijklmnop1234", f"Bearer {MASK}"),  # only the token, in a sentence
    # URLs: userinfo and secret-looking query values only
    ("DATABASE_URL", "postgres://app:pw@db.internal:5432/app", f"postgres://{MASK}@db.internal:5432/app"),
    ("url", "https://h.test/mcp?sig=abc&v=2", f"https://h.test/mcp?sig={MASK}&v=2"),
    ("url", "https://h.test/mcp?token=abc&page=3", f"https://h.test/mcp?token={MASK}&page=3"),
    ("url", "https://h.test/mcp?v=2&lang=en", "https://h.test/mcp?v=2&lang=en"),
    ("url", "https://h.test/mcp?id=q8Zx3LmP0vN7tR2wK9yB4cD6", f"https://h.test/mcp?id={MASK}"),
]


@pytest.mark.parametrize(("key", "value", "shown"), CASES)
def test_each_value_is_masked_only_when_it_is_a_secret(key: str, value: str, shown: str) -> None:
    assert Masker().value(key, value) == shown


def test_reveal_masks_nothing() -> None:
    assert Masker(reveal=True).value("token", "abc") == "abc"
    assert Masker(reveal=True).arguments(["--api-key", "x"]) == ["--api-key", "x"]


def test_non_strings_are_never_masked() -> None:
    # `max_tokens` is a number, `token` unset: nothing to hide
    assert Masker().value("", {"max_tokens": 512, "token": None, "password_required": True}) == {
        "max_tokens": 512,
        "token": None,
        "password_required": True,
    }


def test_arguments_after_or_in_a_secret_flag_and_secret_shapes() -> None:
    args = ["--verbose", "--api-key", "plain", "--token=abc", "--path", "/srv/data", "ghp_" + "a" * 30]
    assert Masker().arguments(args) == [
        "--verbose",
        "--api-key",
        MASK,
        f"--token={MASK}",
        "--path",
        "/srv/data",
        MASK,
    ]


def test_values_from_variables_are_masked_where_they_appear_but_paths_are_shown() -> None:
    masker = Masker(frozenset({"env-9c8b7a6f5e4d", "/home/someone"}))
    assert masker.value("cwd", "/srv/env-9c8b7a6f5e4d") == f"/srv/{MASK}"
    assert masker.value("X-Trace", "env-9c8b7a6f5e4d") == MASK
    assert masker.value("args", ["/home/someone/data"]) == ["/home/someone/data"]


@pytest.mark.parametrize(
    "value",
    ["mcp_nexus.builtin.cortex.server:create_server", "2025-06-18", "127.0.0.1:8787", "node_modules/.bin/x"],
)
def test_near_misses_are_not_secret_shaped(value: str) -> None:
    assert not looks_like_secret(value)


def test_secret_key_words() -> None:
    assert is_secret_key("X-Goog-Api-Key") and not is_secret_key("keyword") and not is_secret_key("PATH")
    assert mask_url("not a url") == "not a url"
