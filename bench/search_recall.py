"""Tool search quality: recall@1, recall@3 and MRR of find_tools' ranking on labelled requests.

    .venv/bin/python bench/search_recall.py [--part tuning|held-out|all|sealed|sealed2|sealed3] [--misses]

The catalog is the real tool definitions of mcp-server-time, mcp-server-git,
server-everything, server-memory and Nexus's built-ins (51 tools, captured in
tests/search/fixtures/real_tools.json; tests/search checks they still match the installed
servers). The requests (tests/search/fixtures/requests.json, 83 English and 83 Chinese) are
written as users ask, each labelled with the tool(s) that answer it; a request counts as
found at k when any of its tools is among the first k. 30% of each language, picked by a hash
of the request's text, was held out in the first round of tuning; the second round tuned on all
166. `--part sealed` scores tests/search/fixtures/sealed_requests.json instead (50 English, 51
Chinese, written and committed before the second round and not ranked until it was done; the
third round, for English, then tuned on it too, so its figures are tuning figures now).
`--part sealed2` scores tests/search/fixtures/sealed2_requests.json (84 English, 65 Chinese),
written blind to the ranker by someone who did not tune it and scored once, for the third
round's ranker. `--part sealed3` scores tests/search/fixtures/sealed3_requests.json (94 English,
77 Chinese), written blind to the ranker while a fourth round chose a sentence model on the
other three sets (docs/PERFORMANCE.md), and scored once for both: the figures to trust now.

Rankings compared (the same index, the same queries):
  bm25 (before)          BM25 over names, descriptions, properties and tags: the ranking before
  bm25 + lexicon         the same, Chinese words glossed into English (CC-CEDICT)
  bm25 + lexicon + thesaurus   and the request's words' related words (search_synonyms.py)
  vectors                WordLlama sentence vectors alone (cosine), with lexicon and thesaurus
  hybrid, no thesaurus   BM25 + vectors + lexicon
  hybrid, no lexicon     BM25 + vectors + thesaurus, Chinese left as it is
  hybrid, no phrases     BM25 + vectors + lexicon + thesaurus, without search_phrases.py
                         (phrasal verbs, statements relating names)
  hybrid                 BM25 + vectors + lexicon + thesaurus + phrases: what find_tools ships

Every ranking reads English words by their stems (search_tokens.py) and reads phrases unless it
says otherwise: the rows before "hybrid" show what each part adds, not the first round's code.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))

from mcp_nexus.catalog import index_search  # noqa: E402
from mcp_nexus.catalog.index_entry import IndexEntry  # noqa: E402
from mcp_nexus.catalog.index_search import IndexSearch  # noqa: E402
from mcp_nexus.catalog.search_lexicon import ChineseGlosser  # noqa: E402
from mcp_nexus.catalog.tags import Tagger  # noqa: E402
from search.real_tools import (  # noqa: E402
    index_entries,
    load_requests,
    load_sealed2_requests,
    load_sealed3_requests,
    load_sealed_requests,
)

DEPTH = 10
"""Ranks looked at for MRR (a request not found in the first 10 scores 0)."""


class _VectorsAlone(IndexSearch):
    def _fuse(self, lexical: Any, text: str, weight: float) -> Any:
        import numpy as np

        assert self._embedding is not None
        if not text.strip():
            return np.zeros_like(lexical)
        return np.einsum("ij,j->i", self._vectors, self._embedding.embed([text])[0]).astype(np.float64) + 1.0


class _NoGlosses(ChineseGlosser):
    def glossed(self, text: str) -> list[tuple[str, list[str]]]:
        return []


def _no_lexicon() -> ChineseGlosser:
    return _NoGlosses({})


def _lexical(entries: list[IndexEntry]) -> IndexSearch:
    return IndexSearch(entries, "bm25")


def _hybrid(entries: list[IndexEntry]) -> IndexSearch:
    return IndexSearch(entries, "hybrid")


RANKINGS: dict[str, tuple[Callable[[list[IndexEntry]], IndexSearch], bool, bool, bool]] = {
    "bm25 (before)": (_lexical, False, False, True),
    "bm25 + lexicon": (_lexical, True, False, True),
    "bm25 + lexicon + thesaurus": (_lexical, True, True, True),
    "vectors": (lambda entries: _VectorsAlone(entries, "hybrid"), True, True, True),
    "hybrid, no thesaurus": (_hybrid, True, False, True),
    "hybrid, no lexicon": (_hybrid, False, True, True),
    "hybrid, no phrases": (_hybrid, True, True, False),
    "hybrid": (_hybrid, True, True, True),
}
"""name -> (how to build the search, whether Chinese is glossed, whether related words are added,
whether phrases are read)."""


def _no_phrases(text: str) -> tuple[list[str], list[str]]:
    return [], []


def first_right(search: IndexSearch, tagger: Tagger, request: dict[str, Any]) -> int | None:
    """The 1-based rank of the first labelled tool in the answer, None when it is not in the first DEPTH."""
    query = request["request"]
    found = search.search(query, limit=DEPTH, query_tags=tagger.tags_for("", query))
    for rank, entry in enumerate(found, 1):
        if entry.name in request["tools"]:
            return rank
    return None


def scores(ranks: Sequence[int | None]) -> dict[str, float]:
    n = len(ranks) or 1
    return {
        "recall@1": sum(1 for r in ranks if r is not None and r <= 1) / n,
        "recall@3": sum(1 for r in ranks if r is not None and r <= 3) / n,
        "mrr": sum(1 / r for r in ranks if r is not None) / n,
    }


def recall_at_3(search: IndexSearch, requests: list[dict[str, Any]]) -> tuple[float, list[str]]:
    """Recall@3 of the shipped ranking on these requests, and the requests it missed at 3."""
    tagger = Tagger()
    ranks = [first_right(search, tagger, r) for r in requests]
    missed = [r["request"] for r, rank in zip(requests, ranks, strict=True) if rank is None or rank > 3]
    return scores(ranks)["recall@3"], missed


def evaluate(ranking: str, requests: list[dict[str, Any]]) -> dict[str, list[int | None]]:
    """Ranks per language for one ranking."""
    build, glossed, expanded, phrases = RANKINGS[ranking]
    original = index_search._glosser, index_search.RELATED, index_search.query_words
    if not glossed:
        index_search._glosser = _no_lexicon  # type: ignore[assignment]
    if not expanded:
        index_search.RELATED = {}
    if not phrases:
        index_search.query_words = _no_phrases
    try:
        search = build(index_entries())
        tagger = Tagger()
        ranks: dict[str, list[int | None]] = {"en": [], "zh": []}
        for request in requests:
            ranks[request["language"]].append(first_right(search, tagger, request))
    finally:
        index_search._glosser, index_search.RELATED, index_search.query_words = original  # type: ignore[assignment]
    return ranks


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--part", choices=("tuning", "held-out", "all", "sealed", "sealed2", "sealed3"), default=None
    )
    parser.add_argument("--misses", action="store_true", help="list the shipped ranking's misses at 3")
    args = parser.parse_args()
    if args.part == "sealed":
        requests = load_sealed_requests()
    elif args.part == "sealed2":
        requests = load_sealed2_requests()
    elif args.part == "sealed3":
        requests = load_sealed3_requests()
    else:
        requests = load_requests()
    parts = [args.part] if args.part else ["tuning", "held-out"]
    print("| ranking | part | language | requests | recall@1 | recall@3 | MRR |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    for ranking in RANKINGS:
        for part in parts:
            chosen = [r for r in requests if part == "all" or r["part"] == part]
            for language, ranks in evaluate(ranking, chosen).items():
                s = scores(ranks)
                print(
                    f"| {ranking} | {part} | {language} | {len(ranks)} | {s['recall@1']:.2f} "
                    f"| {s['recall@3']:.2f} | {s['mrr']:.2f} |"
                )
    if args.misses:
        tagger = Tagger()
        search = IndexSearch(index_entries())
        for part in parts:
            for request in (r for r in requests if part == "all" or r["part"] == part):
                query = request["request"]
                found = search.search(query, limit=3, query_tags=tagger.tags_for("", query))
                if not {e.name for e in found} & set(request["tools"]):
                    print(f"miss [{part}] {query!r}: want {request['tools']}, got {[e.name for e in found]}")


if __name__ == "__main__":
    main()
