"""Shared fixtures: the tests import helpers from tests/support (on sys.path via pytest's pythonpath)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="session")
def _data_dir_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Everything a test's gateway writes (tool index, offloaded results) lands in a temporary folder,
    never in the user's ~/.local; a test that wants its own folder sets NEXUS_DATA_DIR itself."""
    if os.environ.get("NEXUS_DATA_DIR"):
        yield
        return
    os.environ["NEXUS_DATA_DIR"] = str(tmp_path_factory.mktemp("nexus-data"))
    try:
        yield
    finally:
        os.environ.pop("NEXUS_DATA_DIR", None)
