"""The sentence encoder behind find_tools' vectors (catalog/search_embedding.py), with its real weights."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from mcp_nexus.catalog.index_entry import IndexEntry
from mcp_nexus.catalog.index_search import SEMANTIC_WORDS, semantic_text
from mcp_nexus.catalog.search_embedding import DIMENSIONS, SentenceEncoder, shared_embedding


@pytest.fixture(scope="module")
def encoder() -> SentenceEncoder:
    return shared_embedding()


def test_a_chinese_request_lands_next_to_the_english_description_it_means(encoder: SentenceEncoder) -> None:
    tools = encoder.embed(["Switches branches", "Shows the commit logs", "Adds two numbers"])
    assert tools.shape == (3, DIMENSIONS)
    switch = encoder.similarities(tools, "切换到另一个分支")
    assert int(np.argmax(switch)) == 0, switch
    log = encoder.similarities(tools, "查看最近的提交记录")
    assert int(np.argmax(log)) == 1, log


def test_rows_are_unit_length_and_an_empty_text_is_a_zero_row(encoder: SentenceEncoder) -> None:
    vectors = encoder.embed(["get the current time in Tokyo", "   ", "记住这个"])
    norms = np.linalg.norm(vectors, axis=1)
    assert norms[0] == pytest.approx(1.0, abs=1e-5)
    assert norms[1] == 0.0
    assert norms[2] == pytest.approx(1.0, abs=1e-5)


class _CountingModel:
    """The real model, counting the texts it is asked to encode."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.encoded: list[str] = []

    def encode(self, texts: list[str]) -> Any:
        self.encoded += texts
        return self.model.encode(texts)


def test_a_rebuild_encodes_only_the_tool_texts_it_has_not_seen(encoder: SentenceEncoder) -> None:
    counting = _CountingModel(encoder._model)
    fresh = SentenceEncoder(counting, encoder._blas)
    first = fresh.embed_documents(["Shows the commit logs", "Adds two numbers"])
    second = fresh.embed_documents(["Adds two numbers", "Switches branches", "Shows the commit logs"])
    assert counting.encoded == ["Shows the commit logs", "Adds two numbers", "Switches branches"]
    assert np.array_equal(second[0], first[1]) and np.array_equal(second[2], first[0])
    assert np.allclose(
        second, encoder.embed(["Adds two numbers", "Switches branches", "Shows the commit logs"]), atol=1e-6
    )


def test_the_similarity_leaves_blas_threads_as_they_were(encoder: SentenceEncoder) -> None:
    before = [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]
    encoder.similarities(encoder.embed(["Adds two numbers"]), "add 17 and 25")
    assert [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"] == before


def test_a_tools_vector_reads_its_name_and_its_descriptions_first_sentence() -> None:
    entry = IndexEntry(
        name="git.git_log",
        server_id="git",
        tool_name="git_log",
        description="Shows the commit logs. Arguments: repo_path, max_count (default 10).",
    )
    assert semantic_text(entry) == "git log: Shows the commit logs."
    long = entry.model_copy(update={"description": " ".join(["word"] * 100)})
    assert semantic_text(long) == "git log: " + " ".join(["word"] * SEMANTIC_WORDS)
