"""What a config reload did (for logs, the admin API and tests), and how a diff is read into it."""

from __future__ import annotations

from dataclasses import dataclass, field

from mcp_nexus.upstream.config_diff import ConfigDiff


@dataclass
class ReloadReport:
    """What a reload did, for logs, the admin API and tests."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    restarted: list[str] = field(default_factory=list)
    live: list[str] = field(default_factory=list)  # changed without a restart
    enabled: list[str] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)
    gateway_fields: list[str] = field(default_factory=list)
    needs_process_restart: list[str] = field(default_factory=list)  # host, port, token, ...
    chains: list[str] = field(default_factory=list)  # chains added, changed or removed

    def summary(self) -> str:
        parts = [
            f"{label} {', '.join(names)}"
            for label, names in (
                ("added", self.added),
                ("removed", self.removed),
                ("restarted", self.restarted),
                ("changed live", self.live),
                ("enabled", self.enabled),
                ("disabled", self.disabled),
                ("gateway settings", self.gateway_fields),
                ("chains", self.chains),
            )
            if names
        ]
        return "; ".join(parts) or "nothing changed"


def plan_report(diff: ConfigDiff) -> ReloadReport:
    """Which servers a diff adds, removes, restarts or changes live, and which settings wait for a restart."""
    report = ReloadReport(added=list(diff.added), removed=list(diff.removed))
    for change in diff.changed:
        if change.needs_restart:
            report.restarted.append(change.name)
            continue
        if change.enabled_changed:
            (report.enabled if change.new.enabled else report.disabled).append(change.name)
        if [f for f in change.fields if f != "enabled"]:
            report.live.append(change.name)
    report.gateway_fields = list(diff.gateway_fields)
    report.needs_process_restart = diff.restart_only_fields
    return report
