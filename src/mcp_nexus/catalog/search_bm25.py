"""BM25 over tokenized tool documents: one column of precomputed scores per word (Lucene's variant).

What `bm25s` computed for the search before (its default `lucene` method, k1 1.5, b 0.75, float32),
written out here because the search uses only its score matrix: importing `bm25s` cost ~0.1 s
(numba, tqdm) on every process's first search, and its index build is a Python loop with
progress-bar plumbing. tests/search/test_search_bm25.py checks the scores against `bm25s` when it
is installed.

    score(word, document) = idf(word) * tf / (tf + k1 * (1 - b + b * length / average length))
    idf(word) = ln(1 + (documents - df + 0.5) / (df + 0.5))

The matrix is kept by word (compressed sparse columns): `columns[word]` is the word's slot, and
`indptr[slot]:indptr[slot + 1]` range over `indices` (the documents holding it) and `data` (its
score in each), so a query word costs a slice, whatever the number of tools.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

K1 = 1.5
B = 0.75


class BM25Index:
    def __init__(self, documents: Sequence[Sequence[str]]) -> None:
        import numpy as np

        counts = [Counter(tokens) for tokens in documents]
        lengths = np.array([len(tokens) for tokens in documents], dtype=np.float64)
        average = float(lengths.mean()) if len(documents) and lengths.mean() > 0 else 1.0
        postings: dict[str, list[tuple[int, int]]] = {}
        for document, count in enumerate(counts):
            for word, tf in count.items():
                postings.setdefault(word, []).append((document, tf))
        self.columns: dict[str, int] = {}
        indptr = [0]
        indices: list[int] = []
        frequencies: list[int] = []
        idf: list[float] = []
        total = len(documents)
        for slot, (word, held) in enumerate(postings.items()):
            self.columns[word] = slot
            indices.extend(document for document, _ in held)
            frequencies.extend(tf for _, tf in held)
            idf.extend([math.log(1 + (total - len(held) + 0.5) / (len(held) + 0.5))] * len(held))
            indptr.append(len(indices))
        self.indices: Any = np.array(indices, dtype=np.int32)
        self.indptr: Any = np.array(indptr, dtype=np.int64)
        # The same float types, step by step, as bm25s: the same scores to the last bit, so ties
        # between tools fall as they did.
        counted = np.array(frequencies, dtype=np.float32)
        saturation = counted / (K1 * ((1 - B) + B * lengths[self.indices] / average) + counted)
        self.data: Any = (np.array(idf, dtype=np.float32) * saturation).astype(np.float32)

    def postings(self, word: str) -> tuple[Any, Any] | None:
        """(documents holding `word`, its score in each), or None for a word no document has."""
        slot = self.columns.get(word)
        if slot is None:
            return None
        start, end = self.indptr[slot], self.indptr[slot + 1]
        return self.indices[start:end], self.data[start:end]
