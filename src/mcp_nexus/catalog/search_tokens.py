"""Words for BM25: English split on case and punctuation, Chinese as single characters plus bigrams.

Chinese has no spaces, and a word segmenter (jieba) needs a dictionary load of about a second
and still misses domain words ("客厅灯"); overlapping character bigrams match any two-character
word without a dictionary, and the single characters let a one-character query ("灯") match too.
"""

from __future__ import annotations

import re

import Stemmer

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")
_TOKENS = re.compile(
    r"[a-z0-9]+|[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+", re.IGNORECASE
)

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "will",
        "with",
        "you",
        "your",
        "can",
        "may",
        "use",
        "used",
        "using",
        "which",
        "when",
        "what",
        "who",
        "how",
    ]
)
"""Words in nearly every description: they only add noise to the scores."""


_STEMMER = Stemmer.Stemmer("english")
_STEMS: dict[str, str] = {}
_INFLECTIONS = (("ing", 4), ("ed", 3), ("es", 3), ("s", 2), ("ly", 3), ("", 1))
"""An inflectional ending and how many letters the stemmer may take off a word that has it: the
ending plus one ("committing" -> "commit", "staged" -> "stage" by the stemmer's own rules; a word
with no ending loses at most its final e or turns y into i: "delete" -> "delet")."""


def stem(word: str) -> str:
    """The word without its inflection: "committing", "commits" -> "commit", "records" -> "record",
    "deleted", "delete" -> "delet", "lately" -> "late", so a request's form meets the description's.

    The Snowball (Porter 2) English stemmer, kept to inflections: where it also strips a
    derivational ending ("conversation" and "conversion" -> "convers", "operating" and
    "operation" -> "oper") the word keeps its own form (only a plural "s" goes), because those
    collisions tie unrelated tools together, worst for the many senses of a glossed Chinese word.
    Cached: a catalog repeats the same few thousand words."""
    stemmed = _STEMS.get(word)
    if stemmed is None:
        stemmed = _STEMS[word] = _inflection_stem(word)
    return stemmed


def _inflection_stem(word: str) -> str:
    if len(word) <= 3:
        return word
    full = _STEMMER.stemWord(word)
    for ending, allowance in _INFLECTIONS:
        if word.endswith(ending):
            if len(word) - len(full) <= allowance:
                return full
            break
    singular = _plural_stem(word)
    full = _STEMMER.stemWord(singular)
    return full if len(singular) - len(full) <= 1 else singular


def _plural_stem(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


EXACT = "="
"""The mark of a word kept in its own form (only a plural "s" taken off) beside its stem: what a
glossed Chinese word is matched by. A Chinese word's senses are many loose English words ("开":
open, start, turn on, put in operation, operate, run), and their stems would match far more of
the catalog than what was meant ("run" -> "long-running"); an English request's words are few and
meant, and their stems find the description's other forms ("committing" -> "commit")."""


def tokenize(text: str, *, query: bool = False, exact: bool = False) -> list[str]:
    """Document words; with `query`, a Chinese run of two or more characters gives its bigrams only,
    so "当前时间" does not match a tool about a room ("房间") by the single character "间". With
    `exact`, English words are marked `EXACT` and keep their own form (see there)."""
    tokens: list[str] = []
    for piece in _TOKENS.findall(_CAMEL.sub(" ", text)):
        if CJK_RUN.fullmatch(piece):
            if not query or len(piece) == 1:
                tokens.extend(piece)  # single characters
            tokens.extend(piece[i : i + 2] for i in range(len(piece) - 1))
            continue
        word = piece.lower()
        if word not in STOPWORDS:
            tokens.append(EXACT + _plural_stem(word) if exact else stem(word))
    return tokens


def document_words(text: str) -> list[str]:
    """A document's words twice over: as stems for English requests and `EXACT` for glossed Chinese.
    Every English word is in both, so each kind of word scores in BM25 as if it were alone
    (document lengths all double, leaving their ratio to the mean as it was)."""
    tokens: list[str] = []
    exact: list[str] = []
    for piece in _TOKENS.findall(_CAMEL.sub(" ", text)):
        if piece[0] >= "\u3040" and CJK_RUN.fullmatch(piece):  # one comparison skips the regex for ASCII
            tokens.extend(piece)
            tokens.extend(piece[i : i + 2] for i in range(len(piece) - 1))
            continue
        word = piece.lower()
        if word not in STOPWORDS:
            forms = _FORMS.get(word)
            if forms is None:
                forms = _FORMS[word] = (stem(word), EXACT + _plural_stem(word))
            tokens.append(forms[0])
            exact.append(forms[1])
    return tokens + exact


_FORMS: dict[str, tuple[str, str]] = {}
