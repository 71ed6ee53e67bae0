"""The one form code in python_sandbox uses to name a tool (catalog/code_form.py)."""

from __future__ import annotations

import pytest

from mcp_nexus.catalog.code_form import code_call_form, code_identifier, code_path


@pytest.mark.parametrize(
    ("part", "identifier"),
    [
        ("git_log", "git_log"),
        ("git-hub", "git_hub"),
        ("2fa", "_2fa"),
        ("class", "_class"),
        ("", "_"),
        ("查询", "__"),
    ],
)
def test_each_part_becomes_a_python_identifier(part: str, identifier: str) -> None:
    assert code_identifier(part) == identifier
    assert code_identifier(part).isidentifier()


def test_an_exposed_name_splits_at_the_separator_once() -> None:
    assert code_path("git.git_log") == ("git", "git_log")
    assert code_path("weather.get.today") == ("weather", "get_today")
    assert code_path("echo") == ("echo",)
    assert code_path("git__git_log", separator="__") == ("git", "git_log")


def test_the_call_form_names_required_arguments_first_and_at_most_four() -> None:
    schema = {
        "type": "object",
        "properties": {n: {"type": "string"} for n in ("a", "b", "c", "d", "e", "repo_path")},
        "required": ["repo_path"],
    }
    assert (
        code_call_form("git.git_log", schema) == "tools.git.git_log(repo_path=..., a=..., b=..., c=..., ...)"
    )
    assert code_call_form("time.now") == "tools.time.now()"
