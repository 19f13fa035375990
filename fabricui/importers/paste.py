"""Pasted text put back together before an importer reads it, each repair stated in a
warning: shell prompts mixed into the output, lines a terminal wrapped, tabs a terminal
logger dropped (``Switch36`` for ``Switch<TAB>36``), Markdown tables from a wiki (outer
pipes missing, ``**bold**`` and ``code`` marks in the cells).

Each function takes lines and returns the repaired lines with what it did; the importers
say which repairs apply to their format.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

#: A shell prompt followed by a command: ``$ cmd``, ``user@host:~/dir$ cmd``,
#: ``[root@node ~]# cmd``, ``(env) ➜  dir cmd``, each optionally after a ``(env)`` prefix.
_PROMPT = re.compile(
    r"^\s*(?:\([\w.-]{1,40}\)\s+)?"
    r"(?:[$%]\s+\S"
    r"|[\w.-]{1,64}@[\w.-]{1,64}(?::[^\s$#%]{0,200}|\s+[^\s$#%]{1,200})?\s?[$#%]\s"
    r"|\[[\w.-]{1,64}@[^\]]{1,200}\][$#]\s"
    r"|➜\s)"
)
#: A Markdown table's rule under its header: ``|---|:--:|`` or ``--- | ---``.
_MD_RULER = re.compile(r"^\s*(?:\|\s*)?:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)+(?:\|\s*)?$")
#: Emphasis and code marks around a cell's text.
_MD_MARKS = re.compile(r"\*\*|__|`|<br\s*/?>|&nbsp;")


@dataclass
class Repaired:
    """Lines after the repairs, and a warning line for each kind of repair made."""

    lines: list[str]
    """The repaired lines."""
    warnings: list[str] = field(default_factory=list)
    """What was repaired, one line each (empty: nothing was)."""


def _where(numbers: list[int]) -> str:
    shown = ", ".join(str(n) for n in numbers[:5])
    return f"line{'s' if len(numbers) > 1 else ''} {shown}" + (" ..." if len(numbers) > 5 else "")


def drop_prompts(lines: list[str], is_data: Callable[[str], bool]) -> Repaired:
    """Remove shell-prompt lines; those between lines of the format's data (``is_data``:
    a terminal log of several commands) are warned about, a prompt before or after the
    data is not."""
    data = [i for i, line in enumerate(lines) if not _PROMPT.match(line) and is_data(line)]
    first, last = (data[0], data[-1]) if data else (len(lines), -1)
    keep: list[str] = []
    inside: list[int] = []
    for i, line in enumerate(lines):
        if _PROMPT.match(line):
            if first < i < last:
                inside.append(i + 1)
            continue
        keep.append(line)
    if not inside:
        return Repaired(keep)
    return Repaired(
        keep,
        [f"{len(inside)} shell prompt line(s) inside the output ({_where(inside)}) skipped"],
    )


def unwrap(lines: list[str], starts_line: Callable[[str], bool]) -> Repaired:
    """Join lines a terminal wrapped: a line as long as the longest (the terminal's width,
    60 columns or more) whose next line does not start a line of the format
    (``starts_line``) is continued by that next line."""
    lengths = [len(line) for line in lines]
    width = max(lengths, default=0)
    if width < 60 or lengths.count(width) < 2:  # a terminal cuts every long line there
        return Repaired(lines)
    out: list[str] = []
    joined: list[int] = []
    i = 0
    while i < len(lines):
        parts = [lines[i]]
        while (
            len(lines[i]) == width  # this piece was cut at the terminal's edge
            and i + 1 < len(lines)
            and lines[i + 1].strip()
            and not starts_line(lines[i + 1])
        ):
            joined.append(i + 2)
            parts.append(lines[i + 1])
            i += 1
        out.append("".join(parts))
        i += 1
    if not joined:
        return Repaired(lines)
    return Repaired(
        out,
        [
            f"{len(joined)} line(s) wrapped at {width} columns joined to the line before "
            f"({_where(joined)})"
        ],
    )


def restore_tabs(lines: list[str], glued: re.Pattern[str], example: str) -> Repaired:
    """Put back the separator ``glued`` matched without (its groups joined by a tab):
    ``Switch36 "S-..."`` -> ``Switch<TAB>36 "S-..."``."""
    out: list[str] = []
    fixed: list[int] = []
    for number, line in enumerate(lines, 1):
        match = glued.match(line)
        if match:
            fixed.append(number)
            line = "\t".join(match.groups()) + line[match.end() :]
        out.append(line)
    if not fixed:
        return Repaired(lines)
    return Repaired(
        out,
        [
            f"{len(fixed)} line(s) had lost a tab ({example}; a terminal logger's copy?), "
            f"read with it put back ({_where(fixed)})"
        ],
    )


def markdown_tables(lines: list[str]) -> Repaired:
    """Markdown tables as the importers read them: every row between outer pipes, cells
    without ``**bold**``, ``code`` marks or ``<br>``."""
    out = list(lines)
    changed: list[int] = []
    repairs: set[str] = set()
    i = 1
    while i < len(lines):
        if not _MD_RULER.match(lines[i]):
            i += 1
            continue
        header = i - 1
        while header > 0 and not lines[header].strip():
            header -= 1
        end = i + 1
        while end < len(lines) and "|" in lines[end]:
            end += 1
        rows = [header, *range(i + 1, end)]
        i = end  # each table once, however many rulers it holds
        for k in rows:
            body = lines[k].strip()
            text = _md_row(lines[k])
            if text is None:
                continue
            if not (body.startswith("|") and body.endswith("|")):
                repairs.add("the rows' outer pipes added")
            if _MD_MARKS.search(body):
                repairs.add("bold, code and <br> marks removed")
            out[k] = text
            changed.append(k + 1)
    if not changed:
        return Repaired(lines)
    what = " and ".join(sorted(repairs))
    return Repaired(out, [f"a Markdown table read with {what} ({_where(changed)})"])


def _md_row(line: str) -> str | None:
    """``GPU0 | **X** | `NV18``` -> ``| GPU0 | X | NV18 |``; None when the row needs no
    repair (outer pipes, no marks)."""
    body = line.strip()
    outer = body.startswith("|") and body.endswith("|") and len(body) > 1
    if outer and not _MD_MARKS.search(body):
        return None
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") else body
    cells = [" ".join(_MD_MARKS.sub("", cell).split()) for cell in body.split("|")]
    return "| " + " | ".join(cells) + " |"
