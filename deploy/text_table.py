"""Plain-text tables for the command line: columns left-aligned, two spaces apart, no
trailing blanks (what kafka-consumer-groups.sh and friends print)."""

from __future__ import annotations

from collections.abc import Sequence


def format_table(rows: Sequence[Sequence[str]]) -> list[str]:
    """One line per row (the first row is usually the header); [] for no rows."""
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def print_table(rows: Sequence[Sequence[str]]) -> None:
    """Print ``format_table(rows)``, one line each, to standard output."""
    for line in format_table(rows):
        print(line)
