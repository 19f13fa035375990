"""Slurm hostlist expressions: ``node[001-064,100]`` <-> ``node001 ... node064 node100``.

Slurm writes node sets in this compressed form everywhere (``topology.conf``, ``scontrol
show topology``, ``$SLURM_JOB_NODELIST``), so every importer and ``--hosts`` read it the way
Slurm does: items separated by commas (or blanks) outside brackets; each bracket holds
numbers and ``lo-hi`` ranges; a range is zero-padded to the width of its lower bound
(``[08-11]`` -> 08 09 10 11, ``[8-11]`` -> 8 9 10 11); several brackets in one item multiply
(``rack[1-2]-n[01-18]`` is 36 names, the leftmost bracket varying slowest).

The size of an expansion is computed before any name is made: an expression that stands for
more than ``limit`` names is a one-line error, whatever its text length.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from fabricui.importers.common import ParseError, clean_text

#: Most names an expression may expand to (far beyond any cluster; a job list is smaller).
MAX_HOSTS = 262_144
#: Longest expression read [characters].
MAX_EXPRESSION_CHARS = 1_000_000
#: Most digits in one number of a range (larger is a typo or an attack, not a node).
_MAX_DIGITS = 9
_RANGE = re.compile(rf"(\d{{1,{_MAX_DIGITS}}})(?:-(\d{{1,{_MAX_DIGITS}}}))?")
_DIGIT_RUN = re.compile(rf"(\d{{1,{_MAX_DIGITS}}})")
#: A line of a host-name file: one host name or hostlist expression, nothing else.
_NAME_LINE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-\[\],]*")


def _short(text: str) -> str:
    """The expression as quoted in a message (bounded)."""
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _split_items(text: str) -> list[str]:
    """Top-level items: split at commas and blanks outside brackets.

    Raises:
        ParseError: Unbalanced or nested brackets.
    """
    items: list[str] = []
    depth = 0
    start = 0
    for i, char in enumerate(text):
        if char == "[":
            if depth:
                raise ParseError(f"hostlist {_short(text)}: nested '[' at character {i + 1}")
            depth = 1
        elif char == "]":
            if not depth:
                raise ParseError(f"hostlist {_short(text)}: ']' without '[' at character {i + 1}")
            depth = 0
        elif not depth and (char == "," or char.isspace()):
            if i > start:
                items.append(text[start:i])
            start = i + 1
    if depth:
        raise ParseError(f"hostlist {_short(text)}: '[' is never closed")
    if len(text) > start:
        items.append(text[start:])
    return items


def _bracket_numbers(body: str, item: str) -> list[tuple[int, int, int]]:
    """``001-064,100`` -> [(1, 64, 3), (100, 100, 3)]: (low, high, pad width).

    Raises:
        ParseError: Empty, not numbers, or a range that runs backwards.
    """
    ranges: list[tuple[int, int, int]] = []
    for part in body.split(","):
        part = part.strip()
        match = _RANGE.fullmatch(part)
        if match is None:
            raise ParseError(
                f"hostlist {_short(item)}: [{body[:40]}] must hold numbers or lo-hi ranges "
                f"of at most {_MAX_DIGITS} digits (got {part[:20]!r})"
            )
        low_text, high_text = match.group(1), match.group(2)
        low = int(low_text)
        high = int(high_text) if high_text is not None else low
        if high < low:
            raise ParseError(f"hostlist {_short(item)}: range {part} runs backwards")
        ranges.append((low, high, len(low_text)))
    return ranges


def _item_parts(item: str) -> list[str | list[tuple[int, int, int]]]:
    """An item as literal text and bracket ranges, in order."""
    parts: list[str | list[tuple[int, int, int]]] = []
    pos = 0
    while pos < len(item):
        open_at = item.find("[", pos)
        if open_at < 0:
            parts.append(item[pos:])
            break
        close_at = item.index("]", open_at)  # balanced: checked by _split_items
        if open_at > pos:
            parts.append(item[pos:open_at])
        parts.append(_bracket_numbers(item[open_at + 1 : close_at], item))
        pos = close_at + 1
    return parts


def _count(parts: list[str | list[tuple[int, int, int]]]) -> int:
    total = 1
    for part in parts:
        if isinstance(part, list):
            total *= sum(high - low + 1 for low, high, _ in part)
    return total


def _numbers(ranges: list[tuple[int, int, int]]) -> list[str]:
    return [f"{n:0{width}d}" for low, high, width in ranges for n in range(low, high + 1)]


def expand(text: str, limit: int = MAX_HOSTS) -> list[str]:
    """Expand a Slurm hostlist expression into names, in the expression's order.

    Args:
        text: ``node[001-064,100]``, ``rack[1-2]-n[01-18]``, ``a,b,c`` (blanks separate too).
        limit: Most names allowed; checked before any name is made.

    Returns:
        The names, duplicates kept (as Slurm keeps them until ``uniq``).

    Raises:
        ParseError: Malformed (unbalanced or nested brackets, a bracket that is not numbers,
            a backwards range), empty, or more than ``limit`` names.
    """
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ParseError(
            f"hostlist of {len(text):,} characters is longer than {MAX_EXPRESSION_CHARS:,}"
        )
    items = _split_items(text.strip())
    if not items:
        raise ParseError("empty hostlist: give names such as node[001-064,100]")
    parsed = [_item_parts(item) for item in items]
    total = 0
    for item, parts in zip(items, parsed):
        total += _count(parts)
        if total > limit:
            raise ParseError(
                f"hostlist {_short(text)} stands for more than {limit:,} names "
                f"(at {_short(item)}): not a node list"
            )
    names: list[str] = []
    for parts in parsed:
        prefixes = [""]
        for part in parts:
            if isinstance(part, str):
                prefixes = [p + part for p in prefixes]
            else:
                digits = _numbers(part)
                prefixes = [p + d for p in prefixes for d in digits]
        names.extend(prefixes)
    return names


def name_lines(text: str, limit: int = MAX_HOSTS) -> list[str] | None:
    """The hosts of a file of host names, one per line, as ``scontrol show hostnames``
    prints them; a line may also hold a hostlist (``node[01-04]``), ``#`` starts a comment
    and blank lines are skipped.

    Args:
        text: The file as read.
        limit: Most names all lines may expand to together.

    Returns:
        The names, each once, in the file's order; None when the file holds no name or a
        line is not one name or hostlist (``sinfo`` output, prose).

    Raises:
        ParseError: A line that is a hostlist but a malformed one, or more than ``limit``
            names (``line`` set).
    """
    tokens: list[tuple[int, str]] = []
    for number, raw in enumerate(clean_text(text).split("\n"), 1):
        body = raw.split("#", 1)[0].strip()
        if not body:
            continue
        if not _NAME_LINE.fullmatch(body):
            return None
        tokens.append((number, body))
    if not tokens:
        return None
    names: dict[str, None] = {}
    total = 0
    for number, body in tokens:
        try:
            expanded = expand(body, limit)
        except ParseError as exc:
            raise ParseError(exc.message, line=number) from None
        total += len(expanded)
        if total > limit:
            raise ParseError(f"the lines name more than {limit:,} hosts", line=number)
        names.update(dict.fromkeys(expanded))
    return list(names)


def _stem_number(name: str) -> tuple[str, str]:
    """``node064`` -> ("node", "064"); ("name", "") without trailing digits."""
    stem = name.rstrip("0123456789")
    return stem, name[len(stem) :]


def compress(names: Iterable[str]) -> str:
    """The shortest Slurm hostlist of ``names`` on their trailing numbers (sorted, unique).

    ``["node001", "node002", "node003", "node100"]`` -> ``node[001-003,100]``. Zero-padded
    numbers keep their width; names without a trailing number are listed as they are.
    ``expand(compress(x))`` gives ``sorted(set(x))`` in natural order.

    Args:
        names: Host names.

    Returns:
        A comma-separated hostlist expression (empty for no names).
    """
    plain: set[str] = set()
    # (stem, width) -> numbers; width 0 = written without leading zeros.
    groups: dict[tuple[str, int], set[int]] = {}
    for name in names:
        stem, digits = _stem_number(name)
        if not digits or len(digits) > _MAX_DIGITS or "[" in name or "," in name:
            plain.add(name)
            continue
        padded = len(digits) > 1 and digits[0] == "0"
        groups.setdefault((stem, len(digits) if padded else 0), set()).add(int(digits))
    # Unpadded numbers as wide as a padded group of the same stem join it (n09 + n10).
    for (stem, width), numbers in list(groups.items()):
        if width == 0:
            continue
        loose = groups.get((stem, 0))
        if loose:
            fits = {n for n in loose if len(str(n)) == width}
            numbers |= fits
            loose -= fits
    parts: list[tuple[str, int, str]] = []
    for (stem, width), numbers in groups.items():
        if not numbers:
            continue
        ordered = sorted(numbers)
        runs: list[str] = []
        low = prev = ordered[0]
        for n in [*ordered[1:], None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            runs.append(f"{low:0{width}d}" if low == prev else f"{low:0{width}d}-{prev:0{width}d}")
            if n is not None:
                low = prev = n
        body = runs[0] if len(ordered) == 1 else "[" + ",".join(runs) + "]"
        parts.append((stem, ordered[0], stem + body))
    parts.sort(key=lambda p: (p[0], p[1]))
    return ",".join([*sorted(plain), *(p[2] for p in parts)])


def natural_key(name: str) -> tuple[object, ...]:
    """Sort key ordering ``n2`` before ``n10`` (digit runs compare by value)."""
    pieces = _DIGIT_RUN.split(name)
    return tuple((0, int(p), len(p)) if i % 2 else (1, p, 0) for i, p in enumerate(pieces))
