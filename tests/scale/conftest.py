"""One real redis-server for the in-process store tests of this folder (each test uses its own key prefix)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from support.redis_server import RedisServer, redis_server


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with redis_server(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture
def prefix() -> str:
    """A key prefix of this test's own: tests sharing the Redis never see each other's keys."""
    return f"t{uuid.uuid4().hex[:10]}"
