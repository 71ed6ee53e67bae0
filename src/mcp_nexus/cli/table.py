"""How every `nexus` listing prints: a rich table on a terminal, one tab-separated line per row in a pipe.

On a terminal, name and id columns ("key" columns) never wrap and are never cut: when the table
cannot fit, it is drawn wider than the terminal rather than break `cortex.add_entity` in two;
the other columns (descriptions, errors) wrap. When stdout is not a terminal (a pipe, a file),
each table is a header line and then one line per row, columns separated by tabs, nothing
wrapped or shortened whatever COLUMNS says, so `nexus index ls | grep add_entity` finds the row.
In both, control characters in values print as visible escapes (`\\x1b`, `\\n`), never raw.
FORCE_COLOR (or TTY_COMPATIBLE=1) makes a pipe count as a terminal, as rich decides.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

# C0 and C1 controls, DEL, the Unicode line and paragraph separators and the bidirectional
# overrides: all of them can break a line in two or rewrite what a terminal shows.
_OTHERS = "\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_SHOWN = re.compile("[\x00-\x1f" + _OTHERS + "]")
_PIPED = re.compile("[\\\\\x00-\x1f" + _OTHERS + "]")
_IN_TEXT = re.compile("[\x00-\x08\x0b-\x1f" + _OTHERS + "]")  # a line of text keeps its tabs and newlines
_RAW_IN_JSON = re.compile("[" + _OTHERS + "]")  # json.dumps escapes the C0 controls itself
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\\": "\\\\"}


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(value: str) -> str:
    """A value for a terminal cell: control characters as visible escapes, the rest as written."""
    return _SHOWN.sub(_escaped, value)


def escape_piped(value: str) -> str:
    """A value for one tab-separated field: also a backslash doubled, so the escaping can be undone."""
    return _PIPED.sub(_escaped, value)


def print_json(value: Any) -> None:
    """`--json`: the data as the API gave it, every control character as a \\u escape."""
    text = json.dumps(value, indent=2, ensure_ascii=False)
    print(_RAW_IN_JSON.sub(lambda match: f"\\u{ord(match.group()):04x}", text), flush=True)


def first_line(text: str | None) -> str:
    """A description's first non-blank line: a table shows the summary, --json the whole text."""
    return next((line.strip() for line in (text or "").splitlines() if line.strip()), "")


@dataclass(frozen=True)
class Column:
    header: str
    key: bool = False  # a name or id: never wrapped or cut, so that grep and copy find it whole
    justify: Literal["left", "right"] = "left"
    one_line: bool = False  # on a terminal, cut with an ellipsis rather than wrapped (a description)


Cell = str | Text  # a Text carries a style for the terminal; a pipe gets its plain text


@dataclass
class Listing:
    """One table: its columns, its rows and (on a terminal, or as a section line in a pipe) its title."""

    columns: Sequence[Column]
    title: str | None = None
    rows: list[Sequence[Cell]] = field(default_factory=list)

    def add(self, *cells: Cell) -> None:
        assert len(cells) == len(self.columns), (cells, self.columns)
        self.rows.append(cells)


def is_piped(console: Console) -> bool:
    return not console.is_terminal


def _plain(cell: Cell) -> str:
    return cell.plain if isinstance(cell, Text) else cell


def _terminal_cell(cell: Cell) -> Text:
    # Text, never markup: a description like "[entity_exists]" shows as written.
    if isinstance(cell, Text):
        return Text(escape(cell.plain), style=cell.style, justify=cell.justify)
    return Text(escape(cell))


def piped_lines(listing: Listing) -> list[str]:
    """The header line, then one line per row."""
    lines = ["\t".join(escape_piped(column.header) for column in listing.columns)]
    lines.extend("\t".join(escape_piped(_plain(cell)) for cell in row) for row in listing.rows)
    return lines


NARROWEST = 8  # what a wrapping column keeps at least when the terminal is too narrow for the table


def rich_table(listing: Listing, width: int) -> Table:
    """The table for a terminal `width` wide; wider when its key columns and a little of the rest need it."""
    cells = [[_terminal_cell(cell) for cell in row] for row in listing.rows]
    longest = [
        max([cell_len(column.header), *(cell_len(row[index].plain) for row in cells)])
        for index, column in enumerate(listing.columns)
    ]
    # The narrowest the table may be: key columns whole, the others NARROWEST wide at most; a
    # border and two spaces of padding per column, and the left edge.
    least = 1 + sum(
        (size if column.key else min(size, NARROWEST)) + 3
        for size, column in zip(longest, listing.columns, strict=True)
    )
    # One-line columns (descriptions) give up their width first: the room the others leave them.
    one_lines = sum(column.one_line for column in listing.columns)
    others = sum(
        size + 3 for size, column in zip(longest, listing.columns, strict=True) if not column.one_line
    )
    one_line_room = max(NARROWEST, (width - 1 - others) // max(1, one_lines) - 3)
    table = Table(title=listing.title, title_justify="left")
    for size, column in zip(longest, listing.columns, strict=True):
        if column.key:
            table.add_column(column.header, justify=column.justify, no_wrap=True, min_width=size)
        elif column.one_line:
            table.add_column(
                column.header,
                justify=column.justify,
                no_wrap=True,
                overflow="ellipsis",
                max_width=one_line_room,
            )
        else:
            table.add_column(column.header, justify=column.justify, overflow="fold")
    for row in cells:
        table.add_row(*row)
    if least > width:
        table.width = least  # wider than the terminal: its own line wrapping beats a cut name
    return table


def print_listing(listing: Listing, console: Console, *, section: bool = False) -> None:
    """One table. In a pipe, `section` puts a `# title` line before its header (outputs of several tables)."""
    if is_piped(console):
        lines = piped_lines(listing)
        if section and listing.title:
            lines.insert(0, f"# {escape_piped(listing.title)}")
        _write(console, lines)
        return
    table = rich_table(listing, console.width)
    console.print(table, crop=table.width is None)


def print_line(text: str, console: Console, *, style: str | None = None) -> None:
    """A line of text (it may hold newlines), never wrapped at the console's width in a pipe."""
    shown = _IN_TEXT.sub(_escaped, text)
    if is_piped(console):
        _write(console, [shown])
    else:
        console.print(shown, style=style, markup=False, highlight=False)


def print_note(text: str, console: Console, *, style: str | None = None) -> None:
    """A line that goes with a table (totals, a message). In a pipe it starts with `# `, as a title does,
    so that every line but a header or a row does and `grep -v '^#'` leaves the table alone."""
    if is_piped(console):
        _write(console, [f"# {line}" for line in _IN_TEXT.sub(_escaped, text).split("\n")])
    else:
        print_line(text, console, style=style)


def _write(console: Console, lines: list[str]) -> None:
    # Straight to the file: rich would wrap at COLUMNS (80 without one) even with soft wrapping off.
    file = console.file
    file.write("".join(line + "\n" for line in lines))
    file.flush()
