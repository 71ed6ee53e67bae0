"""The argument templates of chain steps: a small form read as data, never evaluated."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_nexus.config.chain_template import TemplateError, placeholders, render

SCOPE: dict[str, Any] = {
    "input": {"city": "Oslo", "limit": 5, "tags": ["a", "b"]},
    "steps": {"log": [{"hash": "abc123", "author": {"name": "Ada"}}], "note": "plain text"},
}


def test_a_whole_placeholder_keeps_the_value_type() -> None:
    filled = render({"n": "{{ input.limit }}", "tags": "{{input.tags}}", "first": "{{ steps.log.0 }}"}, SCOPE)
    assert filled == {"n": 5, "tags": ["a", "b"], "first": {"hash": "abc123", "author": {"name": "Ada"}}}


def test_a_placeholder_inside_text_is_replaced_by_its_text() -> None:
    filled = render(
        "{{ steps.log.0.author.name }} wrote {{ steps.log.0.hash }} in {{ input.city }}: {{ input.tags }}",
        SCOPE,
    )
    assert filled == 'Ada wrote abc123 in Oslo: ["a","b"]'


def test_templates_are_walked_through_lists_and_objects_other_values_kept() -> None:
    filled = render({"a": [1, True, None, {"b": "{{ steps.note }}"}], "c": 2.5}, SCOPE)
    assert filled == {"a": [1, True, None, {"b": "plain text"}], "c": 2.5}


def test_an_input_the_caller_left_out_leaves_its_argument_out() -> None:
    assert render({"city": "{{ input.city }}", "page": "{{ input.page }}"}, SCOPE) == {"city": "Oslo"}


def test_a_missing_value_elsewhere_is_an_error_naming_where_and_what_there_is() -> None:
    with pytest.raises(TemplateError) as caught:
        render({"rev": "{{ steps.log.3.hash }}"}, SCOPE)
    assert str(caught.value) == "rev: {{ steps.log.3.hash }}: steps.log has no item 3 (a list of 1 items)"
    with pytest.raises(TemplateError) as caught:
        render({"q": "in {{ input.page }}"}, SCOPE)  # inside text, a missing input is an error too
    assert "input has no key 'page' (its keys: city, limit, tags)" in str(caught.value)
    with pytest.raises(TemplateError) as caught:
        render({"q": "{{ steps.note.size }}"}, SCOPE)
    assert "steps.note is a text, not an object or a list: it has no 'size'" in str(caught.value)


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("{{ }}", "empty placeholder"),
        ("{{ input.city | upper }}", "is not a path"),
        ("{{ __import__('os') }}", "is not a path"),
        ("{{ env.HOME }}", "must start with 'input' or 'steps'"),
        ("{{ steps }}", "must name a step"),
        ("{{ input.city", "unmatched"),
    ],
)
def test_what_is_not_a_placeholder_is_refused_when_read(template: str, problem: str) -> None:
    with pytest.raises(TemplateError) as caught:
        list(placeholders({"arg": template}))
    assert problem in str(caught.value) and str(caught.value).startswith("arg: ")


def test_placeholders_are_found_with_where_they_are() -> None:
    found = [
        (where, path.text)
        for where, path in placeholders({"a": ["x {{ input.q }}"], "b": {"c": "{{ steps.s.0 }}"}})
    ]
    assert found == [("a[0]", "input.q"), ("b.c", "steps.s.0")]
