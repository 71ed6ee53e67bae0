"""Config errors that name the file, the field path and what was expected."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ConfigProblem:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path or '<root>'}: {self.message}"


@dataclass
class ConfigError(Exception):
    source: str
    problems: list[ConfigProblem] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"invalid config {self.source}:"]
        lines += [f"  - {problem}" for problem in self.problems]
        return "\n".join(lines)
