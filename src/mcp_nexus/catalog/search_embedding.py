"""Sentence vectors for tool search: WordLlama's static token embeddings, averaged (no network, ~0.1 ms a query).

Why this model: it ships its weights inside its PyPI wheel (`wordllama`, 16 MB of float16
token vectors distilled from a large language model's embedding layer, 256 dimensions), so
nothing is downloaded at run time, and a query is a table lookup and a mean, far within the
search's few-millisecond budget. "show recent commits" lands next to "Shows the commit logs",
"give me a small picture" next to "Returns a tiny MCP logo image", which word overlap misses.

The wheel's own loader looks for its tokenizer under a path the wheel does not have and then
tries Hugging Face, so the two files are read here directly and pooled as the library does
(mean of the token vectors, then unit length), on the first `DIMENSIONS` dimensions.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Any

_WEIGHTS = "weights/l2_supercat_256.safetensors"
_TOKENIZER = "tokenizers/l2_supercat_tokenizer_config.json"
DIMENSIONS = 128
"""WordLlama is trained so that a prefix of its 256 dimensions is a smaller model (Matryoshka):
128 ranked the labelled requests as well as 256 (bench/search_recall.py) at half the work per
search, which is what matters at 10,000 tools."""


class StaticEmbedding:
    def __init__(self, vectors: Any, tokenizer: Any) -> None:
        self._vectors = vectors  # (vocabulary, dimensions) float32
        self._tokenizer = tokenizer

    @classmethod
    def from_wordllama(cls) -> StaticEmbedding:
        import numpy as np
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        package = _package_folder("wordllama")
        vectors = load_file(str(package / _WEIGHTS))["embedding.weight"][:, :DIMENSIONS].astype(np.float32)
        tokenizer = Tokenizer.from_file(str(package / _TOKENIZER))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        return cls(vectors, tokenizer)

    @property
    def dimensions(self) -> int:
        return int(self._vectors.shape[1])

    def embed(self, texts: list[str]) -> Any:
        """(len(texts), dimensions) float32, each row of unit length (zero for a text without tokens)."""
        import numpy as np

        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, encoding in enumerate(self._tokenizer.encode_batch(texts, add_special_tokens=False)):
            if encoding.ids:
                out[row] = self._vectors[encoding.ids].mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out


def _package_folder(name: str) -> Path:
    """Where an installed package's files are, without importing it: `import wordllama` alone takes
    ~0.4 s (it imports requests and its own model code), for two data files read here."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"the package {name!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


@functools.cache
def shared_embedding() -> StaticEmbedding:
    """One model per process (16 MB as float32), loaded on first use."""
    return StaticEmbedding.from_wordllama()
