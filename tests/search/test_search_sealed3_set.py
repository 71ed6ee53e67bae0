"""find_tools' ranking on the third sealed set (fixtures/sealed3_requests.json): it must not fall below what was measured.

The set (94 English, 77 Chinese requests over the same 51 real tools) was written blind to the
ranker by someone who did not tune it (05d062e), while a fourth round chose a multilingual
sentence model on the other three sets, and scored once for the shipped ranker: recall@3 0.68
English (64/94), 0.68 Chinese (52/77), under the 0.9 target (docs/PERFORMANCE.md, "Tool search").
The candidate model scored 0.68 / 0.74 on it and was left out for its cost. From now on the set
is a regression guard too.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mcp_nexus.catalog.index_search import IndexSearch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from search.real_tools import (
    index_entries,
    load_requests,
    load_sealed2_requests,
    load_sealed3_requests,
    load_sealed_requests,
)
from search_recall import recall_at_3

FLOOR = {"en": 63 / 94, "zh": 51 / 77}
"""Recall@3 measured once, for the shipped ranker (64/94, 52/77), less one request."""


@pytest.fixture(scope="module")
def search() -> IndexSearch:
    return IndexSearch(index_entries())


def test_the_third_sealed_set_is_its_own_and_names_real_tools() -> None:
    sealed3 = load_sealed3_requests()
    names = {entry.name for entry in index_entries()}
    assert {r["language"] for r in sealed3} == {"en", "zh"}
    assert all(sum(r["language"] == language for r in sealed3) >= 70 for language in ("en", "zh"))
    assert all(r["tools"] and set(r["tools"]) <= names for r in sealed3)
    earlier = [*load_requests(), *load_sealed_requests(), *load_sealed2_requests()]
    assert not {r["request"] for r in sealed3} & {r["request"] for r in earlier}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_recall_at_3_on_the_third_sealed_set_holds(search: IndexSearch, language: str) -> None:
    recall, missed = recall_at_3(search, [r for r in load_sealed3_requests() if r["language"] == language])
    assert recall >= FLOOR[language] - 1e-9, (
        f"recall@3 {recall:.2f} < {FLOOR[language]:.2f}; missed: {missed}"
    )
