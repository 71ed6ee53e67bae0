"""The Chinese lexicon is read from CC-CEDICT once per data folder; later processes map the saved file."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_nexus.catalog import search_lexicon, search_lexicon_cache
from mcp_nexus.catalog.search_lexicon import ChineseGlosser
from mcp_nexus.catalog.search_lexicon_cache import SavedLexicon, cached_lexicon

QUERIES = ["查看最近的提交记录", "切换到另一个分支", "這台電腦的記憶體", "把小明和小红设为朋友关系"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A folder the lexicon was saved to by a first (cold) call, and what that call returned."""
    folder = tmp_path_factory.mktemp("lexicon")
    first = cached_lexicon(folder)
    assert isinstance(first, dict)  # read from CC-CEDICT: nothing was saved yet
    return folder, first


def test_the_first_call_saves_one_file_and_later_calls_read_it_not_cedict(
    built: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, _ = built
    assert [p.name.startswith("cedict-") for p in folder.iterdir()] == [True]

    def no_cedict() -> dict[str, str]:
        raise AssertionError("CC-CEDICT read again although the lexicon was saved")

    monkeypatch.setattr(search_lexicon, "read_cedict", no_cedict)
    assert isinstance(cached_lexicon(folder), SavedLexicon)


def test_the_saved_lexicon_glosses_exactly_as_the_dictionary_read_in_memory(
    built: tuple[Path, dict[str, str]],
) -> None:
    folder, in_memory = built
    saved = cached_lexicon(folder)
    for word in ["提交", "分支", "切换", "電腦", "東京", "暂存", "一", "明和"]:
        assert saved.get(word) == in_memory.get(word), word
    assert "不是一个词语吧" not in saved and saved.get("") is None
    for query in QUERIES:
        assert ChineseGlosser(saved).glossed(query) == ChineseGlosser(in_memory).glossed(query)
    assert len(saved) == len(in_memory)


def test_a_cut_short_file_is_not_trusted_and_a_new_one_replaces_other_versions(
    built: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    _, in_memory = built
    (saved,) = built[0].iterdir()
    cut = tmp_path / saved.name
    cut.write_bytes(saved.read_bytes()[: saved.stat().st_size // 2])
    assert SavedLexicon.open(cut) is None
    cut.write_bytes(b"not a lexicon\n")
    assert SavedLexicon.open(cut) is None
    older = tmp_path / "cedict-0000000000000000.txt"  # another version's
    older.write_bytes(b"nexus-lexicon 1\n")
    cut.unlink()
    search_lexicon_cache.write(cut, in_memory)
    assert isinstance(SavedLexicon.open(cut), SavedLexicon)
    assert sorted(p.name for p in tmp_path.iterdir()) == [cut.name]


def test_a_folder_that_cannot_be_written_still_gives_a_lexicon(
    built: tuple[Path, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, in_memory = built
    monkeypatch.setattr(search_lexicon, "read_cedict", lambda: dict(in_memory))  # the read is tested above
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    lexicon = cached_lexicon(blocked / "search")
    assert lexicon.get("分支") == in_memory["分支"]
    assert blocked.read_text() == "not a folder"
