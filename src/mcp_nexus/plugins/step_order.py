"""The chain's order: the built-in steps by their `order`, each plugin's step where it asks to be.

Chains are listed outermost first. `before: X` puts a step directly outside X (it sees the call
before X does and the result after X); `after: X` directly inside X. Several steps at one place
keep the registry's order (by distribution, then name). A step with neither is the innermost,
just before the route. A step whose anchor is no step is left out and reported by name.
"""

from __future__ import annotations

from collections.abc import Mapping

from mcp_nexus.plugins.specs import StepSpec


def order_steps(specs: Mapping[str, StepSpec]) -> tuple[list[StepSpec], dict[str, str]]:
    """The steps in chain order, and the problems of those left out (by step name)."""
    placed = sorted((s for s in specs.values() if s.order is not None), key=lambda s: s.order or 0)
    innermost = [s for s in specs.values() if s.order is None and not s.before and not s.after]
    pending = [s for s in specs.values() if s.order is None and (s.before or s.after)]
    after_count: dict[str, int] = {}
    while pending:
        names = [s.name for s in placed]
        progress = False
        for spec in list(pending):
            anchor = spec.before or spec.after
            if anchor not in names:
                continue
            index = names.index(anchor)
            if spec.after:
                index += 1 + after_count.get(anchor, 0)
                after_count[anchor] = after_count.get(anchor, 0) + 1
            placed.insert(index, spec)
            names.insert(index, spec.name)
            pending.remove(spec)
            progress = True
        if not progress:
            break
    problems = {
        spec.name: f"placed {'before' if spec.before else 'after'} {spec.before or spec.after!r}, "
        "which is no installed step"
        for spec in pending
    }
    return placed + innermost, problems
