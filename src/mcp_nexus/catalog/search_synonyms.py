"""Words people use for what tools do, grouped: a request's words bring in their group's other words.

Why: tool descriptions are terse and written by developers ("Shows the commit logs",
"Returns the sum of two numbers"); requests are written by users ("show recent commits",
"add 17 and 25"). Neither BM25 nor a static embedding knows that "recent commits" are a log or
that "forget" is a delete. A thesaurus of the verbs and nouns of everyday tool use (reading,
changing, deleting, remembering, time, version control, files, images, numbers) closes most of
that gap; it is about words, not about any one server's tools, and the held-out part of the
labelled requests (bench/search_recall.py) measures how far it carries beyond the requests it was
written with. The Chinese glosses (search_lexicon.py) pass through it too ("提交" -> submit ->
commit).

A related word stands in for the request's word, never adds to it (index_search.py).
"""

from __future__ import annotations

from mcp_nexus.catalog.search_tokens import tokenize

SYNONYM_GROUPS: tuple[str, ...] = (
    # reading and listing
    "show display view see look check inspect print examine peek glance browse",
    "list enumerate existing available",
    "get fetch retrieve obtain return read",
    "search find lookup look query seek",
    "open load access",
    "recent recently lately latest last newest history previous log logs past",
    "everything whole entire full complete dump export",
    "status state condition health clean dirty modified untracked uncommitted pending unsaved",
    "statistic stats count counts metric metrics density report summary overview",
    "duplicate duplicates orphan orphans dangling stale entropy",
    # changing
    "create new make start add build initialize",
    "add append attach include insert",
    "update change modify edit alter changed modified",
    "delete remove erase drop forget discard purge destroy wipe scrub trash ditch scrap eliminate",
    "undo revert reset unstage unstaged restore discard",
    "save store record keep persist write",
    "remember memorize memorise note jot fact observation record",
    "connect link relate relation relationship associate tie",
    "toggle switch enable disable turn on off",
    "send notify notification message alert",
    # people, knowledge, entities
    "entity entities node nodes person people thing item",
    "knowledge know known memory memories graph notes note",
    "observation observations fact facts detail details note",
    "friend friends colleague works employer employee",
    # version control
    "commit commits submit submitted checkin change changes revision",
    "branch branches feature",
    "checkout switch",
    "diff difference differences differ compare comparison changed changes delta versus against",
    "stage staged staging index add mark",
    "repository repo project working tree",
    "file files document documents",
    # time
    "time clock hour hours date day today now current",
    "convert conversion translate change transform",
    "timezone zone timezones city",
    # numbers
    "sum add plus total calculate addition number numbers",
    # media and data
    "image picture photo photograph logo icon",
    "small tiny little mini",
    "compress zip gzip pack archive",
    "echo repeat parrot",
    "environment env variable variables setting settings",
    "link links url urls reference",
    "resource resources",
    "schema structured typed validation",
    "annotation annotations priority audience metadata",
    # the machine
    "system machine computer host device os operating",
    "memory ram disk disks storage cpu processor battery uptime kernel",
    # code and runs
    "code script python program run execute",
    "filter sum column rows count parse json output result results",
    "progress long lengthy slow running operation task job",
    "ask prompt request user form input elicitation",
    "model llm sampling generate write language",
    "research investigate study analyze analyse",
    "folder folders root roots directory directories",
    "subscribe subscription updates notifications",
    "logging log logs messages debug",
)

_GROUPS: list[list[str]] = [
    list(dict.fromkeys(tokenize(group, exact=exact))) for exact in (False, True) for group in SYNONYM_GROUPS
]


def _index() -> dict[str, list[str]]:
    related: dict[str, list[str]] = {}
    for group in _GROUPS:
        for word in group:
            related.setdefault(word, []).extend(w for w in group if w != word)
    return {word: list(dict.fromkeys(words)) for word, words in related.items()}


RELATED: dict[str, list[str]] = _index()
"""word (as tokenize gives it, stemmed or `EXACT`) -> the other words of every group it is in."""


def _surfaces() -> dict[str, str]:
    surface: dict[str, str] = {}
    for group in SYNONYM_GROUPS:
        for word in group.split():
            for token in [*tokenize(word), *tokenize(word, exact=True)]:
                surface.setdefault(token, word)
    return surface


SURFACE: dict[str, str] = _surfaces()
"""stem -> the first word of the groups that gives it ("chang" -> "change", "=changes" ->
"changes"): what the sentence
vectors are given, since a stem is no word to them."""
