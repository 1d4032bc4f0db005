"""Terminal tables that stay readable in a narrow terminal.

Left to itself, rich shrinks every column alike when a table is wider than the terminal: numbers
are cut to "1.18…" and a config breaks mid-word. Here the short columns (ranks, times, ratios,
names) never wrap, and only the columns of running text (a config, a description) give up width,
wrapping between words; a table that cannot fit even so is printed as one record per row.
"""
from __future__ import annotations

from collections.abc import Collection, Sequence

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

# Narrower than this, a running-text column holds too few characters per line to be read: its
# table is printed as records instead.
MIN_TEXT_WIDTH = 16


def make_table(columns: Sequence[str], wrap: Collection[str], title: str | None = None,
               right: Collection[str] = ()) -> Table:
    """A table whose `wrap` columns alone wrap (between words, folding a word longer than the
    column); the others keep their width. `right` columns (numbers) are right-aligned."""
    table = Table(title=title)
    for col in columns:
        table.add_column(col, no_wrap=col not in wrap, overflow="fold", justify="right" if col in right else "left")
    return table


def width_left(console: Console, table: Table) -> int:
    """Characters per line a further column would get beside `table` in this console (borders and
    padding counted)."""
    # measured as if the terminal had no edge: a measurement is otherwise capped at its width
    needed = Measurement.get(console, console.options.update(max_width=1 << 16), table).maximum
    return console.width - needed - 3


def _cells(row: Sequence[str]) -> list[Text]:
    return [Text(str(v)) for v in row]


def print_fitted(console: Console, columns: Sequence[str], rows: Sequence[Sequence[str]], *,
                 keys: Collection[str], wrap: Collection[str] = (), title: str | None = None,
                 styles: Sequence[str] | None = None, right: Collection[str] = (),
                 empty: Collection[str] = ("", "–", "—")) -> None:
    """A table when it fits the terminal; otherwise one record per row: its `keys` columns on a
    line, then the other columns as "name: value", wrapped and indented beneath (empty values left
    out). Cells are plain text (brackets print as they are, no markup)."""
    styles = list(styles or [""] * len(rows))
    fixed = [c for c in columns if c not in wrap]
    probe = make_table(fixed, (), title, right)
    for row in rows:
        probe.add_row(*_cells([v for c, v in zip(columns, row) if c not in wrap]))
    texts = sum(1 for c in columns if c in wrap)
    if width_left(console, probe) >= (MIN_TEXT_WIDTH + 3) * texts - 3:
        table = make_table(columns, wrap, title, right)
        for row, style in zip(rows, styles):
            table.add_row(*_cells(row), style=style)
        console.print(table)
        return
    if title:
        console.print(Text(title, style="italic"))
    for row, style in zip(rows, styles):
        console.print(Text("  ".join(str(v) for c, v in zip(columns, row) if c in keys), style=style or "bold"))
        rest = " · ".join(f"{c}: {v}" for c, v in zip(columns, row) if c not in keys and str(v) not in empty)
        print_indented(console, rest, 4)


def print_indented(console: Console, text: str, indent: int, first: str = "") -> None:
    """`first` + `text`, wrapped between words to the terminal, the lines after the first indented
    by `indent` (no trailing blanks, so a copied line is the text itself)."""
    lead = first or " " * indent
    lines = Text(text).wrap(console, max(console.width - max(len(lead), indent), MIN_TEXT_WIDTH))
    for i, line in enumerate(lines):
        line.rstrip()
        console.print(Text(lead if i == 0 else " " * indent) + line, soft_wrap=True)
