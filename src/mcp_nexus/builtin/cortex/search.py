"""Typo-tolerant, ranked search over entity names, descriptions, tags and observations.

Scoring every entity with a fuzzy scorer costs about a second at 100,000 entities, so the
search works in two steps, both with RapidFuzz:

1. Each query word is matched fuzzily (and by prefix) against the vocabulary of words the
   entities use, which is far smaller than the entities themselves. Entities holding a
   matching word become candidates, weighted by how close and how rare the word is.
2. The best candidates are ranked by `WRatio` of the whole query against their name and
   against their full text (a name hit ranks above an equally good hit in the text),
   blended with how well every query word is found in the entity.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Iterable
from dataclasses import dataclass

from rapidfuzz import fuzz, process, utils

from mcp_nexus.builtin.cortex.gc_pause import garbage_collector_paused
from mcp_nexus.builtin.cortex.records import Entity

MAX_INDEXED_TEXT = 2_000  # chars of desc + observations per entity: a long history cannot slow every query
MAX_QUERY_WORDS = 8
WORD_MATCHES = 25  # vocabulary words kept per query word
CANDIDATES_PER_HIT = 8
MIN_CANDIDATES = 64
TEXT_HIT_WEIGHT = 0.9
PREFIX_SIMILARITY = 0.85
COVERAGE_WEIGHT = 0.5
DEFAULT_SCORE_CUTOFF = 50.0


def _indexed_text(entity: Entity) -> str:
    """What a search looks through: name, tags, type, id words, description, observations."""
    parts = [entity.name, " ".join(entity.tags), entity.type, entity.id.replace("-", " "), entity.desc]
    parts.extend(observation.text for observation in entity.observations)
    return " ".join(parts)[:MAX_INDEXED_TEXT]


def _word_cutoff(word: str) -> float:
    """How close a vocabulary word must be: exact for 1-2 letters, one typo from 4 letters on."""
    if len(word) <= 2:
        return 100.0
    if len(word) <= 4:
        return 85.0
    return 78.0


@dataclass(frozen=True, slots=True)
class SearchHit:
    entity_id: str
    score: float
    matched: str  # "name" or "text"


class FuzzySearchIndex:
    """Pre-processed text and a word index of every entity, updated in place as entities change.

    Changed entities are only noted when they are handed over; the index reads them when the
    next search (or `catch_up`) needs it, all at once, so loading a folder or writing to it
    never waits for indexing. Not thread-safe: the store calls it under its mutex.
    """

    def __init__(self) -> None:
        self._ids: list[str] = []
        self._names: list[str] = []
        self._texts: list[str] = []
        self._position: dict[str, int] = {}
        # word -> positions of the entities using it (ascending), in their whole text / in their name
        self._postings: dict[str, list[int]] = {}
        self._name_postings: dict[str, list[int]] = {}
        self._vocabulary: list[str] | None = None  # both built on demand after new words
        self._sorted_vocabulary: list[str] | None = None
        self._pending: dict[str, Entity] = {}  # changed since the last catch-up, by id

    def __len__(self) -> int:
        """How many entities are indexed (or waiting to be)."""
        return len(self._ids) + sum(1 for entity_id in self._pending if entity_id not in self._position)

    def upsert(self, entity: Entity) -> None:
        """Note that `entity` is new or changed; it is (re)indexed by the next catch-up."""
        self._pending[entity.id] = entity

    def upsert_many(self, entities: Iterable[Entity]) -> None:
        """`upsert` for each of `entities` (a load hands over every changed entity at once)."""
        self._pending.update((entity.id, entity) for entity in entities)

    def catch_up(self) -> None:
        """Index every entity noted since the last catch-up."""
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        with garbage_collector_paused():
            new: list[Entity] = []
            for entity in pending.values():
                position = self._position.get(entity.id)
                if position is None:
                    new.append(entity)
                else:
                    self._reindex(position, entity)
            if new:
                self._add(new)

    def _add(self, entities: list[Entity]) -> None:
        """Index entities never seen before, in bulk (a cold load hands over 100,000 at once)."""
        process = utils.default_process
        start = len(self._ids)
        ids = [entity.id for entity in entities]
        names = [process(entity.name) for entity in entities]
        texts = [process(_indexed_text(entity)) for entity in entities]
        self._ids.extend(ids)
        self._names.extend(names)
        self._texts.extend(texts)
        # One int object per position, shared by every list that holds it (beyond 256,
        # each int is an object of its own: 28 bytes, millions of times over).
        positions = list(range(start, start + len(ids)))
        self._position.update(zip(ids, positions, strict=True))
        vocabulary_size = len(self._postings)
        for postings, words_of in ((self._postings, texts), (self._name_postings, names)):
            get = postings.get
            # Positions only grow here, so a word repeated within one entity is the last
            # position of its list: cheaper to compare than to build a set per entity.
            for position, words in zip(positions, words_of, strict=True):
                for word in words.split():
                    posting = get(word)
                    if posting is None:
                        postings[word] = [position]
                    elif posting[-1] != position:
                        posting.append(position)
        if len(self._postings) != vocabulary_size:
            self._vocabulary = self._sorted_vocabulary = None

    def _reindex(self, position: int, entity: Entity) -> None:
        """Index an entity again after it changed (a new observation)."""
        name = utils.default_process(entity.name)
        text = utils.default_process(_indexed_text(entity))
        self._names[position] = name
        self._texts[position] = text
        for postings, words in ((self._postings, text), (self._name_postings, name)):
            for word in set(words.split()):
                posting = postings.get(word)
                if posting is None:
                    postings[word] = [position]
                    self._vocabulary = self._sorted_vocabulary = None
                else:  # postings stay sorted, so the check is a binary search
                    index = bisect.bisect_left(posting, position)
                    if index == len(posting) or posting[index] != position:
                        posting.insert(index, position)

    def search(self, query: str, limit: int, score_cutoff: float = DEFAULT_SCORE_CUTOFF) -> list[SearchHit]:
        """The best `limit` entities for `query`, best first."""
        self.catch_up()
        processed = utils.default_process(query)
        words = list(dict.fromkeys(processed.split()))[:MAX_QUERY_WORDS]
        if not words or not self._ids:
            return []
        candidates = self._candidates(words, max(limit * CANDIDATES_PER_HIT, MIN_CANDIDATES))
        hits = []
        for position, coarse in candidates:
            text = self._texts[position]
            name_score = fuzz.WRatio(processed, self._names[position], processor=None)
            text_score = fuzz.WRatio(processed, text, processor=None) * TEXT_HIT_WEIGHT
            best, matched = (name_score, "name") if name_score >= text_score else (text_score, "text")
            # Coverage: how well each query word is found somewhere in the entity, so an
            # entity holding all the words outranks one that matches a single word well.
            coverage = sum(fuzz.partial_ratio(word, text, processor=None) for word in words) / len(words)
            score = (1 - COVERAGE_WEIGHT) * best + COVERAGE_WEIGHT * coverage
            if score >= score_cutoff:
                hits.append((round(score, 1), coarse, position, matched))
        hits.sort(key=lambda hit: (-hit[0], -hit[1], hit[2]))
        return [
            SearchHit(self._ids[position], score, matched) for score, _, position, matched in hits[:limit]
        ]

    def _candidates(self, words: list[str], wanted: int) -> list[tuple[int, float]]:
        """Entities sharing (nearly) a word with the query, by summed closeness x rarity."""
        total = len(self._ids)
        scores: dict[int, float] = {}
        for word in words:
            best: dict[int, float] = {}
            for matched, similarity in self._matching_words(word).items():
                posting = self._postings[matched]
                weight = similarity * math.log(1 + total / len(posting))
                for position in posting:
                    if weight > best.get(position, 0.0):
                        best[position] = weight
                # The same word in the name counts double, so name hits are never crowded out.
                name_weight = weight * 2
                for position in self._name_postings.get(matched, ()):
                    if name_weight > best.get(position, 0.0):
                        best[position] = name_weight
            for position, weight in best.items():
                scores[position] = scores.get(position, 0.0) + weight
        return heapq.nlargest(wanted, scores.items(), key=lambda item: item[1])

    def _matching_words(self, word: str) -> dict[str, float]:
        """Vocabulary words close to `word` (typos) or starting with it, with a 0-1 similarity."""
        if self._vocabulary is None:
            self._vocabulary = list(self._postings)
        matches: dict[str, float] = {}
        for matched, score, _ in process.extract(
            word, self._vocabulary, scorer=fuzz.ratio, limit=WORD_MATCHES, score_cutoff=_word_cutoff(word)
        ):
            matches[matched] = score / 100.0
        if len(word) >= 3:
            if self._sorted_vocabulary is None:
                self._sorted_vocabulary = sorted(self._vocabulary)
            ordered = self._sorted_vocabulary
            start = bisect.bisect_left(ordered, word)
            for candidate in ordered[start : start + WORD_MATCHES]:
                if not candidate.startswith(word):
                    break
                matches[candidate] = max(matches.get(candidate, 0.0), PREFIX_SIMILARITY)
        return matches
