"""Tool search over the index: BM25 (search_bm25.py) and sentence vectors, fused; Chinese glossed into English.

Two rankers, because each misses what the other finds. BM25 over names, descriptions, input
property names and tags finds exact words ("git_status", "timezone"); names and tags are
repeated in a tool's document so a word in a name outweighs the same word in a long
description. Sentence vectors (search_embedding.py) find meaning without shared words ("show
recent commits" -> "Shows the commit logs", "give me a small picture" -> "a tiny MCP logo
image"). A Chinese query is glossed word by word into English (search_lexicon.py) for both. English
words match by their stems (search_tokens.py), and what a request says by how its words combine
(phrasal verbs, statements relating names: search_phrases.py) joins it as plain words.
The fused score is BM25 scaled to the best hit, plus the cosine similarity weighted
(`SEMANTIC_WEIGHT`); a tool that shares no word with the query must be similar in meaning
(`MIN_SIMILARITY`) to be returned at all, so a query about nothing here still finds nothing.

Built once per index version (milliseconds for a thousand tools, the vectors included) and then
answered from a sparse matrix and one matrix-vector product: docs/PERFORMANCE.md has the figures.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from mcp_nexus.catalog.index_entry import IndexEntry
from mcp_nexus.catalog.search_bm25 import BM25Index
from mcp_nexus.catalog.search_phrases import query_words
from mcp_nexus.catalog.search_synonyms import RELATED, SURFACE
from mcp_nexus.catalog.search_tokens import CJK_RUN, document_words, tokenize
from mcp_nexus.catalog.tags import name_words

NAME_WEIGHT = 3
TAG_WEIGHT = 2
SEMANTIC_WEIGHT = {"en": 0.5, "zh": 1.0}
"""How much a cosine similarity of 1 counts against the best BM25 hit (scaled to 1), by the query's
language (a query with Chinese words the lexicon knows is "zh"). Chosen on the 166 requests of
tests/search/fixtures/requests.json; Chinese is flat from 0.5 to 2.5 (recall@3 0.90-0.92), English
best at 0.5 (docs/PERFORMANCE.md)."""
EXPANSION_WEIGHT = 1.0
"""A related word (search_synonyms.py) stands in for the query's word at this fraction of its BM25."""
MIN_SIMILARITY = 0.35
"""A tool sharing no word with the query is returned only from this cosine similarity on."""

Ranking = Literal["hybrid", "bm25"]

if TYPE_CHECKING:
    from mcp_nexus.catalog.search_embedding import StaticEmbedding
    from mcp_nexus.catalog.search_lexicon import ChineseGlosser

logger = logging.getLogger(__name__)


def _property_names(schema: dict[str, Any]) -> Iterable[str]:
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for key, value in properties.items():
            yield str(key)
            if isinstance(value, dict):  # one level of nesting: {"target": {"properties": {"x": ..}}}
                inner = value.get("properties")
                if isinstance(inner, dict):
                    yield from (str(k) for k in inner)


def document_tokens(entry: IndexEntry) -> list[str]:
    names = document_words(f"{entry.name} {entry.tool_name}")
    tags = document_words(" ".join(entry.tags))
    return [
        *(names * NAME_WEIGHT),
        *(tags * TAG_WEIGHT),
        *document_words(entry.description),
        *document_words(" ".join(_property_names(entry.input_schema))),
    ]


def semantic_text(entry: IndexEntry) -> str:
    """What a tool's vector is made of: its name as words, then its description."""
    return f"{name_words(entry.tool_name)}: {entry.description}"


class IndexSearch:
    """`ranking="bm25"` is BM25 alone, Chinese still glossed (`tool_search.ranking`; also what the
    search falls back to when the embedding's package is missing): no model loaded, less found."""

    def __init__(self, entries: Sequence[IndexEntry], ranking: Ranking = "hybrid") -> None:
        self.entries = list(entries)
        self.ranking: Ranking = ranking
        self._bm25: BM25Index | None = None
        self._embedding: StaticEmbedding | None = None
        self._vectors: Any = None  # (tools, dimensions), unit rows
        self._by_name: dict[str, list[int]] = {}
        self._tag_masks: dict[str, Any] = {}
        for i, entry in enumerate(self.entries):
            for key in {entry.name, entry.tool_name}:
                self._by_name.setdefault(key, []).append(i)
        if self.entries:
            self._bm25 = BM25Index([document_tokens(e) for e in self.entries])
            if ranking == "hybrid":
                self._embedding = _embedding_or_none()
            if self._embedding is not None:
                self._vectors = self._embedding.embed([semantic_text(e) for e in self.entries])
            else:
                self.ranking = "bm25"

    def search(
        self,
        query: str,
        tags: Sequence[str] | None = None,
        limit: int = 10,
        query_tags: Sequence[str] = (),
    ) -> list[IndexEntry]:
        """Best first; only tools carrying every tag in `tags`; an empty query lists the tagged tools.

        `query_tags` are the tags the query's own words point at (e.g. "导航" -> navigation): they
        join the query as words, so a Chinese query finds a tool described in English by its tag.
        """
        if limit <= 0 or not self.entries:
            return []
        import numpy as np

        wanted = sorted(set(tags or ()))
        allowed = self._with_tags(wanted) if wanted else None
        query = query or ""
        tokens = tokenize(query, query=True)
        if not tokens or self._bm25 is None:
            if allowed is None:
                return []
            return [self.entries[i] for i in np.flatnonzero(allowed)[:limit]]
        glossed = _glosser().glossed(query) if CJK_RUN.search(query) else []
        # Each query word is one term: an English word or tag as itself, a Chinese word as the best
        # of its senses (a sum over every sense would let a word with many senses outweigh the rest).
        # The meaning of how the words combine (phrasal verbs, statements about named things) joins
        # as plain words: search_phrases.py.
        cues, replaced = query_words(query)
        if replaced:
            gone = set(tokenize(" ".join(replaced)))
            tokens = [t for t in tokens if t not in gone]
        terms = [[[token]] for token in [*tokens, *tokenize(" ".join([*query_tags, *cues]))]]
        terms += [[t for sense in senses if (t := tokenize(sense, exact=True))] for _, senses in glossed]
        scores, related = self._lexical(terms)
        if self._vectors is not None:
            # The vector gets each Chinese word's first (most common) sense only: the mean of every
            # sense drifts away from what was meant, while BM25 above takes the best-matching one.
            gloss = " ".join(senses[0] for _, senses in glossed)
            weight = SEMANTIC_WEIGHT["zh" if glossed else "en"]
            related_words = " ".join(SURFACE.get(token, token) for token in related)
            text = f"{CJK_RUN.sub(' ', query)} {gloss} {' '.join(cues)} {related_words}"
            scores = self._fuse(scores, text, weight)
        if allowed is not None:
            scores[~allowed] = 0.0
        for i in self._by_name.get(query.strip(), ()):  # a query that is a tool's name finds it first
            if allowed is None or allowed[i]:
                scores[i] += 1e6
        # The best `limit` without sorting every score; ties keep the index order (stable).
        k = min(limit, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.lexsort((top, -scores[top]))]
        return [self.entries[i] for i in top if scores[i] > 0]

    def _lexical(self, terms: list[list[list[str]]]) -> tuple[Any, list[str]]:
        """BM25 summed over the query's terms; a term is its best alternative, an alternative the sum
        of its words, and a word scores as itself or as its best related word, never both.

        Summing every related word instead would let a word with a large group ("battery":
        memory, disk, cpu, ...) outweigh the rest of the query; the same holds for the senses of a
        Chinese word ("还有": furthermore, in addition, still).
        """
        import numpy as np

        bm25 = self._bm25
        assert bm25 is not None
        size = len(self.entries)
        own = {token for term in terms for alternative in term for token in alternative}
        used: dict[str, None] = {}
        words: dict[str, Any] = {}

        def word_scores(token: str) -> Any:
            if token not in words:
                word = np.zeros(size, dtype=np.float64)
                held = bm25.postings(token)
                if held is not None:
                    word[held[0]] = held[1]
                for other in RELATED.get(token, ()):
                    held = bm25.postings(other)
                    if held is None or other in own:
                        continue
                    used[other] = None
                    docs = held[0]  # each document once: no need for maximum.at
                    word[docs] = np.maximum(word[docs], EXPANSION_WEIGHT * held[1])
                words[token] = word
            return words[token]

        total = np.zeros(size, dtype=np.float64)
        seen: set[tuple[tuple[str, ...], ...]] = set()
        for term in terms:
            key = tuple(tuple(alternative) for alternative in term)
            if not term or key in seen:
                continue
            seen.add(key)
            best = np.zeros(size, dtype=np.float64)
            for alternative in term:
                np.maximum(
                    best, sum((word_scores(t) for t in dict.fromkeys(alternative)), np.zeros(size)), out=best
                )
            total += best
        return total, list(used)

    def _fuse(self, lexical: Any, text: str, weight: float) -> Any:
        """BM25 scaled to its best hit plus the weighted similarity; weak meaning alone counts as no match."""
        import numpy as np

        assert self._embedding is not None
        best = lexical.max()
        fused = lexical / best if best > 0 else np.zeros_like(lexical)
        if not text.strip():
            return fused
        # einsum, not BLAS: a threaded BLAS matrix-vector product on a busy two-core host waits
        # for its threads (p50 14 ms at 10,000 tools against 0.7 ms here).
        similarity = np.einsum("ij,j->i", self._vectors, self._embedding.embed([text])[0]).astype(np.float64)
        similarity[(lexical <= 0) & (similarity < MIN_SIMILARITY)] = 0.0
        return fused + weight * np.maximum(similarity, 0.0)

    def _with_tags(self, tags: list[str]) -> Any:
        """A boolean mask of the tools carrying every tag (one mask per tag, built once)."""
        import numpy as np

        mask = np.ones(len(self.entries), dtype=bool)
        for tag in tags:
            if tag not in self._tag_masks:
                self._tag_masks[tag] = np.array([tag in e.tags for e in self.entries], dtype=bool)
            mask &= self._tag_masks[tag]
        return mask


def _embedding_or_none() -> StaticEmbedding | None:
    try:
        from mcp_nexus.catalog.search_embedding import shared_embedding

        return shared_embedding()
    except (ImportError, OSError) as exc:  # an install without the model: BM25 still answers
        logger.warning("tool search: no sentence vectors (%s); ranking by BM25 alone", exc)
        return None


def _glosser() -> ChineseGlosser:
    from mcp_nexus.catalog.search_lexicon_cache import shared_glosser

    return shared_glosser()
