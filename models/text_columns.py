"""Text in columns for the command line: rows aligned, or wrapped to the terminal's width with each row's last
column beside or below its figures, and long lines reflowed under their own text."""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from typing import Any


def aligned(rows: list[tuple[str, ...]], widths: list[int] | None = None) -> list[str]:
    """``rows`` as indented lines, each column but the last padded to the widest entry (or ``widths``)."""
    if not rows:
        return []
    widths = widths or column_widths(rows)
    return ["  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1] for row in rows]


def column_widths(rows: list[tuple[str, ...]]) -> list[int]:
    """The width of each column but the last."""
    return [max(len(row[k]) for row in rows) for k in range(len(rows[0]) - 1)]


DEFAULT_WIDTH = 100  # columns when the output is not a terminal (a file, a pipe)
MIN_WIDTH = 40
BELOW = " " * 6  # the indent of text that goes on the lines below its entry
MIN_ROOM = 24  # the fewest columns a last column too long to fit may wrap in beside its entry, not below


def output_width(stream: Any = None) -> int:
    """The columns text is wrapped to: $COLUMNS if set, else the terminal's width, else DEFAULT_WIDTH."""
    stream = stream or sys.stdout
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return max(int(columns), MIN_WIDTH)
    try:
        if stream.isatty():
            return max(shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns, MIN_WIDTH)
    except (AttributeError, OSError, ValueError):  # a closed or replaced stream
        pass
    return DEFAULT_WIDTH


def wrap(text: str, width: int, first: str, rest: str) -> list[str]:
    """``text`` wrapped to ``width`` after the indent ``first``, then ``rest``; never inside a word or at a hyphen."""
    return textwrap.wrap(text, width, initial_indent=first, subsequent_indent=rest, break_long_words=False,
                         break_on_hyphens=False) or [first.rstrip()]


def wrapped(rows: list[tuple[str, ...]], width: int, widths: list[int] | None = None, *,
             last_below: bool = False) -> list[str]:
    """``rows`` as lines of at most ``width`` columns (a word longer than the room excepted).

    The leading columns are aligned (to ``widths`` if given); the last is wrapped in the room to their
    right, or on indented lines below when the room is narrow.  With ``last_below`` each row's last
    column always goes on the lines below, and the one before it is the one wrapped beside the others.
    """
    if not rows:
        return []
    below = [row[-1] for row in rows] if last_below else [""] * len(rows)
    body = [row[:-1] for row in rows] if last_below else rows
    widths = widths or column_widths(body)
    lines: list[str] = []
    for row, extra in zip(body, below):
        *lead, last = row
        head = "  " + "".join(cell.ljust(w) + "  " for cell, w in zip(lead, widths))
        if width - len(head) >= min(MIN_ROOM, len(last)):  # it fits beside, or wraps in room enough
            lines += wrap(last, width, head, " " * len(head))
        else:  # too narrow beside the entry: the leading cells on one line, the rest below
            lines += wrap("  ".join(cell for cell in lead if cell), width, "  ", BELOW)
            lines += wrap(last, width, BELOW, BELOW)
        if extra:
            lines += wrap(extra, width, BELOW, BELOW)
    return lines


def reflow(text: str, width: int) -> str:
    """``text`` with each line longer than ``width`` wrapped, its continuation indented under its own text.

    A line ``  - item`` continues under ``item``; any other indented line four columns in from its indent.
    """
    out: list[str] = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        indent = line[:len(line) - len(line.lstrip())]
        bullet = "- " if line.lstrip().startswith("- ") else ""
        rest = " " * (len(indent) + (len(bullet) or 4))
        out += wrap(line.strip(), width, indent, rest)
    return "\n".join(out)


def columns(rows: list[tuple[str, ...]], width: int | None, *, last_below: bool = True) -> list[str]:
    """``rows`` aligned on one line each (``width`` None), or wrapped to ``width`` (the last column on the
    lines below each row's figures with ``last_below``, else beside them)."""
    return aligned(rows) if width is None else wrapped(rows, width, last_below=last_below)


def reflowed(text: str, width: int | None) -> str:
    """``text`` as it is (``width`` None), or with its long lines wrapped (:func:`reflow`)."""
    return text if width is None else reflow(text, width)
