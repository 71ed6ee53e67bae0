"""BM25 over the tool index (bm25s): names, descriptions, input property names and tags.

Built once per index version (a few milliseconds for a thousand tools) and then answered from
sparse matrices. Names and tags are repeated in a tool's document so that a word in a name
outweighs the same word somewhere in a long description.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from mcp_nexus.catalog.index_entry import IndexEntry
from mcp_nexus.catalog.search_tokens import tokenize

NAME_WEIGHT = 3
TAG_WEIGHT = 2

if TYPE_CHECKING:
    import bm25s


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
    names = tokenize(f"{entry.name} {entry.tool_name}")
    tags = tokenize(" ".join(entry.tags))
    return [
        *(names * NAME_WEIGHT),
        *(tags * TAG_WEIGHT),
        *tokenize(entry.description),
        *tokenize(" ".join(_property_names(entry.input_schema))),
    ]


class IndexSearch:
    def __init__(self, entries: Sequence[IndexEntry]) -> None:
        self.entries = list(entries)
        self._retriever: bm25s.BM25 | None = None
        self._by_name: dict[str, list[int]] = {}
        self._tag_masks: dict[str, Any] = {}
        for i, entry in enumerate(self.entries):
            for key in {entry.name, entry.tool_name}:
                self._by_name.setdefault(key, []).append(i)
        if self.entries:
            import bm25s  # numpy and bm25s load on the first search, not with every `nexus` command

            logging.getLogger("bm25s").setLevel(logging.WARNING)
            retriever = bm25s.BM25()
            retriever.index([document_tokens(e) for e in self.entries], show_progress=False)
            self._retriever = retriever

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
        tokens = tokenize(query or "", query=True)
        if tokens:
            tokens += tokenize(" ".join(query_tags))
        if not tokens or self._retriever is None:
            if allowed is None:
                return []
            return [self.entries[i] for i in np.flatnonzero(allowed)[:limit]]
        scores = np.asarray(self._retriever.get_scores(tokens), dtype=np.float64)
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

    def _with_tags(self, tags: list[str]) -> Any:
        """A boolean mask of the tools carrying every tag (one mask per tag, built once)."""
        import numpy as np

        mask = np.ones(len(self.entries), dtype=bool)
        for tag in tags:
            if tag not in self._tag_masks:
                self._tag_masks[tag] = np.array([tag in e.tags for e in self.entries], dtype=bool)
            mask &= self._tag_masks[tag]
        return mask
