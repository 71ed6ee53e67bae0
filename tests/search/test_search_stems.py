"""search_tokens.stem: inflections go, derivations stay (so unrelated words do not collide)."""

from __future__ import annotations

import pytest

from mcp_nexus.catalog.search_tokens import document_words, stem, tokenize


@pytest.mark.parametrize(
    "forms",
    [
        ("commit", "commits", "committing", "committed"),
        ("stage", "staged", "staging", "stages"),
        ("delete", "deleted", "deletes", "deleting"),
        ("modify", "modified", "modifies"),
        ("record", "records", "recorded"),
        ("relation", "relations"),
        ("entity", "entities"),
        ("recent", "recently"),
    ],
)
def test_the_inflections_of_a_word_share_its_stem(forms: tuple[str, ...]) -> None:
    assert len({stem(form) for form in forms}) == 1, {form: stem(form) for form in forms}


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("conversation", "conversion"),  # Porter 2 gives both "convers"
        ("operation", "operating"),  # and both "oper"
        ("difference", "differ"),
        ("manager", "manage"),
    ],
)
def test_derivations_keep_their_own_stem(one: str, other: str) -> None:
    assert stem(one) != stem(other)


def test_short_words_and_chinese_are_left_alone() -> None:
    assert stem("is") == "is"
    assert stem("log") == "log"
    assert tokenize("提交 Committing") == ["提", "交", "提交", "commit"]


def test_a_document_holds_each_english_word_as_its_stem_and_in_its_own_form() -> None:
    assert document_words("Running logs 日志") == ["run", "log", "日", "志", "日志", "=running", "=log"]
    # a glossed Chinese sense is matched in its own form: "run" (开) is not "long-running"
    assert tokenize("run", exact=True) == ["=run"]
    assert tokenize("run", exact=True)[0] not in document_words("a long-running operation")
    assert tokenize("run")[0] in document_words("a long-running operation")
