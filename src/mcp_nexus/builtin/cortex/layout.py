"""Where things live inside a knowledge folder.

    <root>/.lock                       advisory lock shared by every writer and reader
    <root>/entities/<category>.jsonl   entity and observation records of one category
    <root>/relations/<YYYY>/<MM>.jsonl relations recorded that month (UTC)

Every path is built from a validated category or a validated year and month; nothing
else from the caller ever reaches the file system.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from mcp_nexus.builtin.cortex.validation import check_category_name, check_year_month

_CATEGORY_FILE_RE = re.compile(r"([a-z][a-z0-9_]{0,31})\.jsonl")
_YEAR_DIR_RE = re.compile(r"[0-9]{4}")
_MONTH_FILE_RE = re.compile(r"(0[1-9]|1[0-2])\.jsonl")


@dataclass(frozen=True, slots=True)
class KnowledgeLayout:
    """The paths of one knowledge folder."""

    root: Path

    @property
    def lock_file(self) -> Path:
        return self.root / ".lock"

    @property
    def entities_dir(self) -> Path:
        return self.root / "entities"

    @property
    def relations_dir(self) -> Path:
        return self.root / "relations"

    def create(self) -> None:
        # 0700: the knowledge may be private (a missing root is created so too).
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.entities_dir.mkdir(mode=0o700, exist_ok=True)
        self.relations_dir.mkdir(mode=0o700, exist_ok=True)

    def entity_file(self, category: str) -> Path:
        return self.entities_dir / f"{check_category_name(category)}.jsonl"

    def relation_file(self, year: str, month: str) -> Path:
        year, month = check_year_month(year, month)
        return self.relations_dir / year / f"{month}.jsonl"

    def category_files(self) -> list[tuple[str, Path]]:
        """Every well-named category file on disk, by category name."""
        if not self.entities_dir.is_dir():
            return []
        found = []
        for path in self.entities_dir.iterdir():
            match = _CATEGORY_FILE_RE.fullmatch(path.name)
            if match and path.is_file():
                found.append((match.group(1), path))
        return sorted(found)

    def month_files(self) -> list[tuple[str, Path]]:
        """Every well-named relation file on disk, as (`YYYY/MM`, path), oldest first."""
        if not self.relations_dir.is_dir():
            return []
        found = []
        for year_dir in self.relations_dir.iterdir():
            if not (_YEAR_DIR_RE.fullmatch(year_dir.name) and year_dir.is_dir()):
                continue
            for path in year_dir.iterdir():
                match = _MONTH_FILE_RE.fullmatch(path.name)
                if match and path.is_file():
                    found.append((f"{year_dir.name}/{match.group(1)}", path))
        return sorted(found)
