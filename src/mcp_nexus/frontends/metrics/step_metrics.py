"""`/metrics` families that pipeline steps keep themselves (the built-in `redact`, plugins' steps).

A step with a `metric_families()` method is asked at scrape time; the families are its own
(e.g. `nexus_redactions_total`), built from counters it keeps, never from call arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client.core import Metric
from prometheus_client.registry import Collector


class StepMetricsCollector(Collector):
    def __init__(self, steps: Callable[[], Iterable[Any]]) -> None:
        self.steps = steps  # read per scrape

    def collect(self) -> Iterator[Metric]:
        for step in self.steps():
            families = getattr(step, "metric_families", None)
            if callable(families):
                yield from families()
