"""`/metrics` families of tool integrity (catalog/tool_integrity.py, docs/INTEGRITY.md).

nexus_tool_integrity_flags_total{kind}   findings of the hidden-instruction scan, each
                                         definition counted once per kind
nexus_tool_integrity_held{mode}          tools held now: quarantine (not listed) or warn (flagged)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from mcp_nexus.catalog.tool_integrity import ToolIntegrity


class IntegrityCollector(Collector):
    def __init__(self, integrity: Callable[[], ToolIntegrity]) -> None:
        self.integrity = integrity  # read per scrape

    def collect(self) -> Iterator[Metric]:
        integrity = self.integrity()
        flags = CounterMetricFamily(
            "nexus_tool_integrity_flags", "hidden-instruction findings in tool definitions", labels=["kind"]
        )
        for kind, count in sorted(integrity.flags_total.items()):
            flags.add_metric([kind], count)
        yield flags
        held = GaugeMetricFamily(
            "nexus_tool_integrity_held", "tools whose definition is not the approved one", labels=["mode"]
        )
        holds = integrity.pending()
        held.add_metric(["quarantine"], sum(1 for hold in holds if hold.quarantined))
        held.add_metric(["warn"], sum(1 for hold in holds if not hold.quarantined))
        yield held
