"""Command groups of `nexus` that are imported only when used, so `nexus --help` and `nexus version`
start in a fraction of a second.

`nexus device` alone imports the `mcp` package and half of the gateway (seconds on a busy
machine); `nexus bridge` the Xiaozhi bridge. The root group lists such a group under its name
with a one-line summary written here, and imports its module when a command line names it
(to run it, complete it, or show its own help). tests/cli/test_cli_start.py checks that each
summary is the loaded group's own.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import typer
from typer.core import TyperCommand, TyperGroup


@dataclass(frozen=True)
class LazyGroupSpec:
    """Where a group's `typer.Typer` lives ("module:attribute") and its summary for the root help."""

    target: str
    summary: str

    def load(self, name: str) -> Any:
        module_name, _, attribute = self.target.partition(":")
        command = typer.main.get_command(getattr(importlib.import_module(module_name), attribute))
        command.name = name
        _plain_help(command)
        return command


def _plain_help(command: Any) -> None:
    """Click's plain help for a group and its commands, as the root group has (typer's rich help
    imports a quarter of a second of modules, and draws boxes a pipe does not want)."""
    if hasattr(command, "rich_markup_mode"):
        command.rich_markup_mode = None
    # typer gives a group it builds as a program of its own the completion options: they are the root's.
    command.params = [p for p in command.params if p.name not in ("install_completion", "show_completion")]
    for sub in getattr(command, "commands", {}).values():
        _plain_help(sub)


class _Unloaded(TyperCommand):
    """A lazy group's place in the root group until a command line names it: its name and summary."""

    def __init__(self, name: str, spec: LazyGroupSpec) -> None:
        super().__init__(name=name, help=spec.summary)
        self.spec = spec


class LazyGroup(TyperGroup):
    """A typer group whose subclasses list extra groups in LAZY, imported on first use."""

    LAZY: ClassVar[Mapping[str, LazyGroupSpec]] = {}

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for name, spec in self.LAZY.items():
            self.commands.setdefault(name, _Unloaded(name, spec))
        self._listing = False

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = self.commands.get(cmd_name)
        if isinstance(command, _Unloaded) and not self._listing:
            command = self.commands[cmd_name] = command.spec.load(cmd_name)
        return command

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        # The command list of `nexus --help` needs only names and summaries: no group is imported.
        self._listing = True
        try:
            super().format_commands(ctx, formatter)
        finally:
            self._listing = False
