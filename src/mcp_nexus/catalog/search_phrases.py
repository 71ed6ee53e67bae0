"""What an English request says beyond its single words: phrasal verbs and statements about named things.

Why: BM25 and the thesaurus (search_synonyms.py) see words one at a time, and the sentence
vectors average them, so the meaning that lives in how words combine is lost. Two kinds of
combination carry most of it in requests to tools:

- Phrasal verbs. "pull up", "jot down", "check in", "take out", "roll back": the verb alone
  means something else (or nothing a tool says) and the particle is a stop word to the index.
  A verb followed within a few words by its particle ("take everything back out") stands for
  the plain verb of the table below, the way a dictionary defines it.
- Statements about named things. "Carol is Dave's manager" and "Bob works at Acme" state a
  relation between two names: a request to record that relation, whatever the verb. The
  same statement negated ("doesn't ... anymore", "no longer") asks to remove it. A request that
  names things without relating them ("Carol and Dave") is about those named entries.

The result is a list of plain words that join the query as extra terms (index_search.py); the
table is general English (each entry as a dictionary gives it), not any tool's wording.
"""

from __future__ import annotations

import re

from mcp_nexus.catalog.search_synonyms import RELATED
from mcp_nexus.catalog.search_tokens import stem

PHRASAL_VERBS: dict[tuple[str, str], str] = {
    # seeing and finding
    ("pull", "up"): "show open",
    ("bring", "up"): "show open",
    ("call", "up"): "show open",
    ("look", "up"): "find",
    ("look", "into"): "investigate",
    ("look", "over"): "inspect",
    ("look", "through"): "search",
    ("go", "over"): "inspect",
    ("go", "through"): "inspect",
    ("dig", "into"): "investigate",
    ("dig", "up"): "find",
    ("find", "out"): "find",
    ("figure", "out"): "find",
    ("track", "down"): "find",
    ("hunt", "down"): "find",
    ("read", "out"): "read show",
    ("print", "out"): "print show",
    ("list", "out"): "list",
    ("spell", "out"): "show",
    ("sum", "up"): "summary",
    ("break", "down"): "summary",
    # writing down and keeping
    ("jot", "down"): "note record",
    ("write", "down"): "note record",
    ("note", "down"): "note record",
    ("put", "down"): "note record",
    ("take", "down"): "note record",
    ("log", "down"): "note record",
    ("keep", "track"): "record",
    ("hold", "onto"): "save keep",
    ("hang", "onto"): "save keep",
    ("check", "in"): "commit",
    ("set", "up"): "create",
    ("fill", "in"): "input",
    ("fill", "out"): "input",
    ("add", "up"): "sum",
    ("tot", "up"): "sum",
    ("total", "up"): "sum",
    ("count", "up"): "count",
    ("zip", "up"): "compress",
    ("pack", "up"): "compress",
    ("boil", "down"): "compress",
    # removing and undoing
    ("take", "out"): "remove",
    ("take", "back"): "undo",
    ("take", "off"): "remove",
    ("back", "out"): "undo",
    ("roll", "back"): "revert",
    ("go", "back"): "revert",
    ("put", "back"): "restore",
    ("get", "rid"): "delete",
    ("wipe", "out"): "delete",
    ("clear", "out"): "delete",
    ("clean", "out"): "delete",
    ("clean", "up"): "delete",
    ("throw", "away"): "discard",
    ("throw", "out"): "discard",
    ("cross", "off"): "delete",
    ("cross", "out"): "delete",
    ("strike", "out"): "delete",
    ("scratch", "out"): "delete",
    ("scratch", "off"): "delete",
    ("strike", "off"): "delete",
    ("knock", "off"): "remove",
    ("rub", "out"): "erase",
    ("drop", "off"): "remove",
    ("leave", "out"): "exclude",
    ("pull", "out"): "remove",
    # switching and changing
    ("check", "out"): "checkout switch",
    ("switch", "over"): "switch",
    ("change", "over"): "switch",
    ("hop", "over"): "switch",
    ("move", "over"): "switch",
    ("turn", "on"): "enable",
    ("turn", "off"): "disable",
    ("switch", "on"): "enable",
    ("switch", "off"): "disable",
    ("shut", "off"): "disable",
    ("shut", "down"): "disable",
    ("fire", "up"): "start",
    ("kick", "off"): "start",
    ("spin", "up"): "start",
    ("start", "up"): "start",
    ("branch", "off"): "branch create",
    ("split", "off"): "branch create",
    ("swap", "out"): "replace",
    ("mix", "up"): "change",
    # asking and telling
    ("ask", "for"): "request",
    ("send", "out"): "send",
    ("ping", "back"): "echo",
    ("say", "back"): "echo",
    ("repeat", "back"): "echo",
}
"""(verb, particle) -> the plain words it means. Particles come from the closed class of English
adverbial particles and prepositions; the verb is matched by its stem ("jotted", "pulls")."""

_PARTICLE_WINDOW = 4
"""How many words may stand between a verb and its particle ("take everything back out")."""

_BY_VERB: dict[str, dict[str, str]] = {}
for (_verb, _particle), _meaning in PHRASAL_VERBS.items():
    _BY_VERB.setdefault(stem(_verb), {})[_particle] = _meaning

_WORD = re.compile(r"[A-Za-z][A-Za-z'’]*")
_NEGATIONS = frozenset({"not", "no", "never", "anymore", "longer", "nobody", "none"})
"""Words that deny a statement ("doesn't", "isn't" are caught by their n't)."""
_QUESTION = re.compile(r"\?|\b(?:what|when|where|which|who|whom|whose|why|how)\b", re.IGNORECASE)
_JOINERS = frozenset({"and", "or", "nor"})
_PLURAL_BE = frozenset({"are", "were", "aren't", "weren't"})
_CLAUSE_BREAK = re.compile(r"[,;:.!?\"()]")
_NOT_NAMES = frozenset(
    {"i", "i'm", "i've", "i'd", "i'll", "ok", "okay", "oops", "please", "hey", "hi", "utc"}
)


def phrasal_verbs(text: str) -> list[tuple[str, str, str]]:
    """(verb, particle, plain words) for each phrasal verb in `text`, verb and particle as written
    (lower case)."""
    words = [w.lower() for w in _WORD.findall(text)]
    found: list[tuple[str, str, str]] = []
    for i, word in enumerate(words):
        particles = _BY_VERB.get(stem(word))
        if not particles:
            continue
        for particle in words[i + 1 : i + 2 + _PARTICLE_WINDOW]:
            meaning = particles.get(particle)
            if meaning is not None:
                found.append((word, particle, meaning))
                break
    return found


def phrase_words(text: str) -> list[str]:
    """Plain words for the phrasal verbs in `text`, each once, in order."""
    return list(dict.fromkeys(w for _, _, meaning in phrasal_verbs(text) for w in meaning.split()))


def statement_words(text: str) -> list[str]:
    """["relation"] when the request states how two named things relate, ["relation", "delete"]
    when it denies it, else []. A statement is related names within one clause ("Carol is Dave's
    manager", "Bob works at Acme") or names listed and then said to be something to each other
    ("Alice and Bob are friends"); names merely listed ("Carol and Dave") or asked about ("what
    time is it in New York if it's 9am in London") state nothing to record."""
    if _QUESTION.search(text):
        return []
    related = negated = False
    for number, clause in enumerate(_CLAUSE_BREAK.split(text)):
        words = _WORD.findall(clause)
        lowered = [w.lower().replace("’", "'") for w in words]
        names: list[tuple[int, bool]] = []  # (position of its last word, listed after "and"/"or")
        for position, word in enumerate(words):
            following = words[position + 1] if position + 1 < len(words) else None
            if not _is_name(word, following, position == 0 and number == 0):
                continue
            if names and names[-1][0] == position - 1:  # "New York", "Acme Corp": one name
                names[-1] = (position, names[-1][1])
            else:
                names.append((position, position > 0 and lowered[position - 1] in _JOINERS))
        if len(names) < 2:
            continue
        after_last = lowered[names[-1][0] + 1 :]
        if any(not listed for _, listed in names[1:]) or any(w in _PLURAL_BE for w in after_last):
            related = True
        negated = negated or any(w in _NEGATIONS or w.endswith("n't") for w in lowered)
    if not related:
        return []
    return ["relation", "delete"] if negated else ["relation"]


_STATEMENT_VERBS = frozenset(
    {
        "is",
        "was",
        "has",
        "had",
        "does",
        "did",
        "isn't",
        "wasn't",
        "hasn't",
        "doesn't",
        "didn't",
        "no",
        "now",
        "and",
    }
)
"""After a capitalised first word, these mark it as the subject of a statement ("Carol is ...")."""


def _is_name(word: str, following: str | None, first_of_request: bool) -> bool:
    """A capitalised word that is not "I" nor an acronym (README, UTC). The request's first word is
    capitalised anyway: it is a name when possessive ("Carol's") or the subject of a statement,
    i.e. followed by a form of be/have/do or by a third-person verb ("Bob works"), and is no
    word the thesaurus knows ("Shows", "Lists" are requests, not names)."""
    bare = re.sub(r"['’]s$", "", word)
    if not bare[:1].isupper() or bare.isupper() or bare.lower() in _NOT_NAMES:
        return False
    if not first_of_request or word != bare:
        return True
    if following is None or stem(bare.lower()) in RELATED:
        return False
    nxt = following.lower().replace("’", "'")
    return nxt in _STATEMENT_VERBS or (nxt.endswith("s") and not nxt.endswith("ss") and nxt not in RELATED)


def query_words(text: str) -> tuple[list[str], list[str]]:
    """What this module reads in an English request: the plain words to add (each once), and the
    request's words they replace: a phrasal verb's verb and particle, which alone would mislead
    ("check" in "check in" is no inspection, "off" in "scratch off" no switch)."""
    verbs = phrasal_verbs(text)
    replaced = list(dict.fromkeys(w for verb, particle, _ in verbs for w in (verb, particle)))
    return list(dict.fromkeys([*phrase_words(text), *statement_words(text)])), replaced
