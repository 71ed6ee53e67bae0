"""search_bm25.BM25Index gives the scores bm25s gave (its `lucene` method), to the bit, on real and varied tools."""

from __future__ import annotations

import sys
from pathlib import Path

import bm25s
import numpy as np
import pytest

from mcp_nexus.catalog.index_search import document_tokens
from mcp_nexus.catalog.search_bm25 import BM25Index
from search.real_tools import index_entries

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from search_latency import synthetic_catalog


def _column(indices: np.ndarray, data: np.ndarray, size: int) -> np.ndarray:
    column = np.zeros(size, dtype=np.float32)
    column[indices] = data
    return column


@pytest.mark.parametrize("size", [51, 1000])
def test_the_scores_are_those_of_bm25s(size: int) -> None:
    entries = index_entries() if size == 51 else synthetic_catalog(size)
    documents = [document_tokens(entry) for entry in entries]
    theirs = bm25s.BM25()
    theirs.index(documents, show_progress=False)
    mine = BM25Index(documents)
    matrix = theirs.scores
    words = {word: at for word, at in theirs.vocab_dict.items() if word}
    assert set(words) == set(mine.columns)
    for word, at in words.items():
        start, end = matrix["indptr"][at], matrix["indptr"][at + 1]
        expected = _column(matrix["indices"][start:end], matrix["data"][start:end], len(documents))
        held = mine.postings(word)
        assert held is not None
        assert np.array_equal(_column(held[0], held[1], len(documents)), expected), word


def test_a_word_no_tool_has_has_no_postings_and_an_empty_index_answers() -> None:
    index = BM25Index([["git", "log", "log"], ["time", "zone"]])
    assert index.postings("weather") is None
    docs, scores = index.postings("log")  # type: ignore[misc]
    assert list(docs) == [0] and scores[0] > 0
    assert BM25Index([]).postings("git") is None
