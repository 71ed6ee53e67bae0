"""search_phrases.py: phrasal verbs and statements about named things, read as plain words."""

from __future__ import annotations

import pytest

from mcp_nexus.catalog.index_entry import IndexEntry
from mcp_nexus.catalog.index_search import IndexSearch
from mcp_nexus.catalog.search_phrases import phrase_words, query_words, statement_words


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("pull up the notes", ["show", "open"]),
        ("jotted down a thought", ["note", "record"]),  # the verb by its stem
        ("take everything back out of staging", ["undo"]),  # words between verb and particle
        ("check in my work", ["commit"]),
        ("check out the release branch", ["checkout", "switch"]),
        ("turn off the lights", ["disable"]),
    ],
)
def test_a_phrasal_verb_gives_the_plain_verb(text: str, words: list[str]) -> None:
    assert phrase_words(text) == words


def test_a_verb_without_its_particle_or_too_far_from_it_gives_nothing() -> None:
    assert phrase_words("pull the branch") == []
    assert phrase_words("take a very long and winding walk out") == []
    assert phrase_words("up pull") == []  # the particle must follow the verb


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("Carol is Dave's manager, save that", ["relation"]),
        ("Bob works at Acme Corp", ["relation"]),
        ("Alice and Bob are friends", ["relation"]),
        ("Carol doesn't manage Dave anymore", ["relation", "delete"]),
        ("Bob no longer works at Acme", ["relation", "delete"]),
    ],
)
def test_a_statement_relating_two_names_asks_for_a_relation(text: str, words: list[str]) -> None:
    assert statement_words(text) == words


@pytest.mark.parametrize(
    "text",
    [
        "pull up the records for Carol and Dave",  # names listed, not related
        "if it's 9am in London what time is it in New York",  # a question
        "remember that Alice prefers tea",  # one name
        "Show the README",  # a capitalised request and an acronym are no names
        "Lists branches",
    ],
)
def test_no_relation_without_a_statement_relating_two_names(text: str) -> None:
    assert statement_words(text) == []


def test_query_words_gives_each_word_once_and_the_words_a_phrase_replaces() -> None:
    words, replaced = query_words("Carol doesn't work with Dave, cross him off and take him out")
    assert words == ["delete", "remove", "relation"]
    assert replaced == ["cross", "off", "take", "out"]
    assert query_words("show recent commits") == ([], [])


def test_a_phrasal_verb_s_own_words_no_longer_count_in_the_search() -> None:
    """ "check" in "check in" is no inspection: the search ranks the request as "commit my work"."""

    def tool(name: str, description: str) -> IndexEntry:
        return IndexEntry(name=name, server_id="s", tool_name=name, description=description)

    search = IndexSearch(
        [tool("inspect", "Check and inspect the work tree"), tool("commit", "Commit work")], "bm25"
    )
    assert search.search("check in my work")[0].name == "commit"
    assert search.search("check my work")[0].name == "inspect"
