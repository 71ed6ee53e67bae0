"""An option left out costs `nexus` no pydantic import.

typer (0.2x) converts every parameter's value through a pydantic TypeAdapter, and builds that
adapter (importing pydantic: a tenth of a second or more) even for a value that was not given,
which its converter then passes through as None. `nexus version` has three such options (the
help and completion options), so it paid the import for nothing. Here a missing value goes
through typer's own pass-through converter instead, whose answer for None is the same; a given
value still gets the real adapter.

typer's internals may change: if the names used here are gone, nothing is patched and
`nexus` is only slower (tests/cli/test_cli_start.py notices).
"""

from __future__ import annotations

from typing import Any

from typer import core

try:
    from typer._coercion import PassThroughRuntimeParam
except ImportError:  # pragma: no cover - another typer
    PassThroughRuntimeParam = None  # type: ignore[assignment,misc]


def install() -> None:
    parameter = getattr(core, "_TyperParameter", None)
    original = getattr(parameter, "process_value", None)
    if parameter is None or original is None or PassThroughRuntimeParam is None:
        return
    if getattr(original, "_missing_values_stay_cheap", False):
        return

    def process_value(self: Any, ctx: Any, value: Any) -> Any:
        if value is not None or getattr(self, "_runtime_param", True) is not None:
            return original(self, ctx, value)
        descriptor = self.type_descriptor
        self._runtime_param = PassThroughRuntimeParam(
            parameter_info=descriptor.parameter_info, annotation=descriptor.annotation
        )
        try:
            return original(self, ctx, value)
        finally:
            self._runtime_param = None  # a value given later still gets the real adapter

    process_value._missing_values_stay_cheap = True  # type: ignore[attr-defined]
    parameter.process_value = process_value
