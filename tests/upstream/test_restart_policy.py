"""When a failed server is tried again: exponential backoff with jitter, a cap, a budget, and its reset."""

from __future__ import annotations

import random

import pytest

from mcp_nexus.config.schema import RestartPolicy
from mcp_nexus.upstream.restart_policy import RestartBudget


def budget(**policy: float) -> RestartBudget:
    values = {"backoff_min": 1.0, "backoff_max": 60.0, "max_attempts": 5, "reset_after": 60.0, **policy}
    return RestartBudget(RestartPolicy.model_validate(values), rng=random.Random(7))


def test_each_attempt_waits_twice_as_long_within_twenty_percent_up_to_the_cap() -> None:
    restarts = budget(backoff_min=1.0, backoff_max=10.0, max_attempts=0)
    delays = [restarts.next_delay() for _ in range(8)]
    for attempt, delay in enumerate(delays[:4]):  # 1, 2, 4, 8 s
        assert 0.8 * 2**attempt <= delay <= 1.2 * 2**attempt
    assert all(delay == 10.0 for delay in delays[5:])  # capped
    assert restarts.attempts == 8


def test_the_budget_is_spent_after_max_attempts_and_zero_means_never() -> None:
    limited = budget(max_attempts=2)
    assert not limited.exhausted()
    limited.next_delay()
    limited.next_delay()
    assert limited.exhausted()
    endless = budget(max_attempts=0)
    for _ in range(100):
        endless.next_delay()
    assert not endless.exhausted()


@pytest.mark.parametrize("became_ready", [True, False], ids=["ready-briefly", "never-ready"])
def test_a_failure_without_a_long_ready_period_keeps_counting(became_ready: bool) -> None:
    restarts = budget(reset_after=60)
    restarts.next_delay()
    restarts.next_delay()
    if became_ready:
        restarts.on_ready()  # ... and fails again at once, well within reset_after
    restarts.on_failure()
    assert restarts.attempts == 2


def test_a_failure_after_a_long_ready_period_starts_the_count_over() -> None:
    restarts = budget(reset_after=0.0)  # every READY period is long enough
    restarts.next_delay()
    restarts.next_delay()
    restarts.on_ready()
    restarts.on_failure()
    assert restarts.attempts == 0 and restarts.ready_at is None
    first = restarts.next_delay()
    assert 0.8 <= first <= 1.2  # back to the shortest wait
