"""The matrix of ``nvidia-smi topo -m`` as text: its header line, its rows and the blocks
they form, in every layout people paste (TAB or space aligned, Markdown tables, glued
tokens such as ``NIC11NIC12`` and ``NODEPXB``, a ``topo -p2p`` matrix after it, rows without
their header). What the cells mean is ``nvidia_smi``'s job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: Link cells; a bonded-NVLink count has at most a few digits (NV18), so a longer run of
#: digits is no link cell.
_LINK = r"X|NV\d{1,4}(?!\d)|SYS|SOC|NODE|PHB|PXB|PIX"
_LINK_ONE = re.compile(_LINK)
_LINK_TOKEN = re.compile(rf"(?:{_LINK})+")
#: Cells of ``nvidia-smi topo -p2p r|w|rw|n|a``.
P2P_CODES = frozenset({"OK", "CNS", "GNS", "TNS", "NS", "DR", "U"})
_LABEL_PART = re.compile(r"GPU\d+|NIC\d+|[a-z][a-z0-9]*_(?:bond_)?\d+")
#: A token made of labels only (``NIC11NIC12``). Checked with fullmatch first: ``findall``
#: alone restarts inside a long identifier at every letter, quadratic on a long token.
_LABEL_RUN = re.compile(rf"(?:{_LABEL_PART.pattern})+")
_ROW_LABEL = re.compile(r"GPU\d+|NIC\d+|[A-Za-z][\w.:-]*")
_EXTRA = re.compile(r"GPU\s+NUMA(?:\s+ID)?|CPU(?:\s+Affinity)?|NUMA(?:\s+Affinity)?")
_EXTRA_WORDS = frozenset({"CPU", "NUMA", "GPU", "Affinity", "ID"})
_RULER_CHARS = frozenset("|:+=-")
#: Most columns a ``topo -m`` matrix has: 16 GPUs and a few dozen NIC ports on the largest
#: machines; a "header" with more is not one (and would cost quadratic time in pairs).
MAX_COLUMNS = 512
_FENCE = re.compile(r"^\s*(?:```|~~~|</?details|<summary)")
#: Affinity columns, in the order nvidia-smi prints them.
EXTRA_KEYS = ("cpu", "numa", "gpu_numa")


def _extra_key(text: str) -> str:
    if text.startswith("GPU"):
        return "gpu_numa"
    return "cpu" if text.startswith("CPU") else "numa"


def _split_labels(token: str) -> list[str]:
    """``NIC11NIC12`` -> [NIC11, NIC12]; a token that is no run of labels stays whole."""
    if not _LABEL_RUN.fullmatch(token):
        return [token]
    parts: list[str] = _LABEL_PART.findall(token)
    return parts


def _is_ruler(line: str) -> bool:
    """A rule under a header (``---|---``, ``+----+``): blanks and ``|:+=-`` with a ``---``."""
    return "---" in line and all(c.isspace() or c in _RULER_CHARS for c in line)


def _split_codes(token: str) -> list[str] | None:
    """``NODEPXB`` -> [NODE, PXB]; None when ``token`` is not made of link codes."""
    if _LINK_TOKEN.fullmatch(token):
        return _LINK_ONE.findall(token)
    return None


def _is_cell(token: str) -> bool:
    return _split_codes(token) is not None or token in P2P_CODES


@dataclass
class Header:
    """The matrix's header line: its column labels and where each starts."""

    line: int
    labels: list[str]
    label_pos: list[int]
    extras: list[tuple[int, str]]
    """(column start, key) of the affinity columns."""


@dataclass
class Row:
    """One row of the matrix: its label, its link cells and the cells after them."""

    line: int
    label: str
    codes: list[str]
    code_pos: list[int]
    extras: list[tuple[int, str]]
    """(position, text) of the cells after the link cells; position -1 for markdown cells."""
    markdown: bool = False

    @property
    def p2p(self) -> bool:
        return any(c in P2P_CODES for c in self.codes)


@dataclass
class Block:
    """A header (None: rows pasted without it) and the rows under it."""

    header: Header | None
    rows: list[Row] = field(default_factory=list)

    @property
    def kind(self) -> str:
        if not self.rows:
            return "empty"
        return "p2p" if any(r.p2p for r in self.rows) else "topo"

    @property
    def line(self) -> int:
        return self.header.line if self.header else self.rows[0].line


def _tokens(line: str) -> list[tuple[int, str]]:
    return [(m.start(), m.group()) for m in re.finditer(r"\S+", line)]


def _markdown_cells(line: str) -> list[str] | None:
    stripped = line.strip()
    if not stripped.startswith("|"):
        return None
    return [c.strip() for c in stripped.strip("|").split("|")]


def _header_of(line: str, number: int) -> Header | None:
    """The header described by ``line`` (tabs expanded), or None."""
    cells = _markdown_cells(line)
    if cells is not None:
        while cells and not cells[0]:
            cells = cells[1:]
        if not cells or cells[0] != "GPU0" or (len(cells) > 1 and _is_cell(cells[1])):
            return None
        md_labels: list[str] = []
        md_extras: list[tuple[int, str]] = []
        for k, cell in enumerate(cells):
            if _EXTRA.fullmatch(cell):
                md_extras.append((-1 - k, _extra_key(cell)))
            elif cell:
                md_labels.extend(_split_labels(cell))
        if len(md_labels) > MAX_COLUMNS:
            return None
        return Header(number, md_labels, [-1] * len(md_labels), md_extras)
    tokens = _tokens(line)
    if not tokens:
        return None
    first = _split_labels(tokens[0][1])
    if first[0] != "GPU0":
        return None
    if len(first) == 1 and len(tokens) > 1 and _is_cell(tokens[1][1]):
        return None
    labels: list[str] = []
    positions: list[int] = []
    extra_from = None
    for pos, token in tokens:
        if token in _EXTRA_WORDS:
            extra_from = pos
            break
        glued = re.fullmatch(r"(.+?)(CPU|NUMA)", token)
        if glued and _LABEL_RUN.fullmatch(glued.group(1)):
            # ``NIC9CPU Affinity``: the TAB before the affinity columns was lost.
            token, extra_from = glued.group(1), pos + len(glued.group(1))
        parts = _split_labels(token)
        offset = pos
        for part in parts:
            labels.append(part)
            positions.append(offset)
            offset += len(part)
        if extra_from is not None:
            break
    extras: list[tuple[int, str]] = []
    if extra_from is not None:
        extras = [(m.start(), _extra_key(m.group())) for m in _EXTRA.finditer(line, extra_from)]
    if len(labels) > MAX_COLUMNS:
        return None
    return Header(number, labels, positions, extras)


def _row_of(line: str, number: int, width: int | None) -> Row | None:
    """A matrix row (label, link cells, other cells), or None when ``line`` is none.

    Args:
        line: One input line, tabs expanded.
        number: Its 1-based line number.
        width: Link cells expected (None: take every link cell).
    """
    cells = _markdown_cells(line)
    if cells is not None:
        if len(cells) < 2 or not _ROW_LABEL.fullmatch(cells[0]):
            return None
        codes: list[str] = []
        k = 1
        while k < len(cells) and (width is None or len(codes) < width):
            split = _split_codes(cells[k]) or ([cells[k]] if cells[k] in P2P_CODES else None)
            if split is None:
                break
            codes.extend(split)
            k += 1
        if not codes or len(codes) > MAX_COLUMNS:
            return None
        extras = [(-1, c) for c in cells[k:]]
        return Row(number, cells[0], codes, [-1] * len(codes), extras, markdown=True)
    tokens = _tokens(line)
    if len(tokens) < 2 or not _ROW_LABEL.fullmatch(tokens[0][1]):
        return None
    codes, code_pos = [], []
    k = 1
    while k < len(tokens) and (width is None or len(codes) < width):
        pos, token = tokens[k]
        split = _split_codes(token) or ([token] if token in P2P_CODES else None)
        if split is None:
            break
        for part in split:
            codes.append(part)
            code_pos.append(pos)
            pos += len(part)
        k += 1
    if not codes or len(codes) > MAX_COLUMNS:
        return None
    return Row(number, tokens[0][1], codes, code_pos, tokens[k:])


def read_blocks(lines: list[str]) -> list[Block]:
    """Every header-led matrix in the text, in order."""
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        header = _header_of(lines[i], i + 1)
        if header is None:
            i += 1
            continue
        block = Block(header)
        width = len(header.labels)
        i += 1
        while i < len(lines):
            line = lines[i]
            if not line.strip() or _is_ruler(line):
                if block.rows and not line.strip():
                    break
                i += 1
                continue
            if _FENCE.match(line) or _header_of(line, i + 1) is not None:
                break
            row = _row_of(line, i + 1, width)
            if row is None:
                break
            block.rows.append(row)
            i += 1
        blocks.append(block)
    return blocks


def headerless_block(lines: list[str]) -> Block | None:
    """The first run of matrix rows without a header line (an excerpt), or None."""
    block: Block | None = None
    for i, line in enumerate(lines):
        row = _row_of(line, i + 1, None)
        ok = row is not None and len(row.codes) >= 2 and not row.p2p
        if ok and row is not None:
            if block is None:
                block = Block(None)
            block.rows.append(row)
        elif block is not None:
            break
    return block
