"""Fixtures shared by the lifecycle tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.orphans import kill_marked, new_run_id


@pytest.fixture
def run_id() -> Iterator[str]:
    """A marker prefix for this test's processes; whatever carries it is killed afterwards."""
    value = new_run_id()
    try:
        yield value
    finally:
        kill_marked(value)
