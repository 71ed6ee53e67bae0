"""Words for BM25: English split on case and punctuation, Chinese as single characters plus bigrams.

Chinese has no spaces, and a word segmenter (jieba) needs a dictionary load of about a second
and still misses domain words ("客厅灯"); overlapping character bigrams match any two-character
word without a dictionary, and the single characters let a one-character query ("灯") match too.
"""

from __future__ import annotations

import re

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


def _stem(word: str) -> str:
    # Plural and third-person "s" only: enough to match "lights"/"light", "gets"/"get"
    # without a stemmer's surprises on names ("status" stays "status").
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def tokenize(text: str, *, query: bool = False) -> list[str]:
    """Document words; with `query`, a Chinese run of two or more characters gives its bigrams only,
    so "当前时间" does not match a tool about a room ("房间") by the single character "间"."""
    tokens: list[str] = []
    for piece in _TOKENS.findall(_CAMEL.sub(" ", text)):
        if CJK_RUN.fullmatch(piece):
            if not query or len(piece) == 1:
                tokens.extend(piece)  # single characters
            tokens.extend(piece[i : i + 2] for i in range(len(piece) - 1))
            continue
        word = piece.lower()
        if word not in STOPWORDS:
            tokens.append(_stem(word))
    return tokens
