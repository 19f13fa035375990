"""Parse ``rocm-smi --showtopo`` output: weight, hops and link-type matrices and NUMA nodes.

Blocks are found by their ``=== title ===`` banners (any width); a matrix whose banner was cut
off is named by its values and position (rocm-smi prints weight, hops, link type, NUMA in that
order). Truncated matrices and missing blocks are stated; with no link-type block, a weight of
15 is read as one XGMI hop (rocm-smi's XGMI weight; PCIe paths weigh 20 or more).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from fabricui.importers.common import (
    TOPO_M_ROW,
    NodeLayout,
    ParseError,
    clean_text,
    span,
    wrong_format,
)

FORMAT = "rocm-smi"
EXPECTED = "`rocm-smi --showtopo` output"
#: Weight of one XGMI hop in rocm-smi's topology.
XGMI_WEIGHT = 15
#: Most GPU columns a matrix may have (eight or sixteen on real machines); a longer "header"
#: is not one, and its pairs would cost quadratic time.
MAX_COLUMNS = 256

_HEADER = re.compile(r"^\s*GPU\d{1,4}(?:\s+GPU\d{1,4})*\s*$")
_ROW = re.compile(r"^\s*(GPU\d{1,4})\s+(\S.*)$")
_NUMA = re.compile(r"^\s*GPU\[(\d+)\]\s*:\s*\(Topology\)\s*Numa (Node|Affinity)\s*:\s*(\S+)")
_KINDS = ("weight", "hops", "type")
_KIND_NAMES = {"weight": "weight", "hops": "hops", "type": "link type"}


def _banner(line: str) -> str | None:
    """The title of a ``==== title ====`` banner line (3+ ``=`` each side), else None.

    Read with string methods: a regex with a lazy title between two ``={3,}`` runs takes
    quadratic time on a long line of ``=``.
    """
    text = line.strip()
    if len(text) >= 6 and not text.strip("="):
        return ""  # a rule of = only
    inner = text.lstrip("=")
    title = inner.rstrip("=")
    if len(text) - len(inner) < 3 or len(inner) - len(title) < 3:
        return None
    return title.strip()


def _kind_of(title: str) -> str | None:
    low = title.lower()
    if "weight" in low:
        return "weight"
    if "hop" in low:
        return "hops"
    if "link type" in low or "type" in low:
        return "type"
    if "numa" in low:
        return "numa"
    return None


@dataclass
class _Matrix:
    kind: str | None
    line: int
    columns: list[str]
    rows: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class RocmTopo:
    """GPUs and the weight / hops / link type of every GPU pair."""

    gpus: list[str]
    """GPU labels (``GPU0`` ...)."""
    links: list[dict[str, Any]]
    """a, b, kind (``XGMI``/``PCIE``/None), weight, hops for each known pair."""
    numa: dict[str, int] = field(default_factory=dict)
    """GPU -> NUMA node (the ``Numa Nodes`` block)."""
    warnings: list[str] = field(default_factory=list)
    """Stated gaps (untitled or truncated matrices, missing blocks, inferred link types)."""
    notes: list[str] = field(default_factory=list)
    """Remarks that are not gaps."""
    format: str = FORMAT
    """Importer name."""

    def to_json(self) -> dict[str, Any]:
        """format, gpus, links, numa."""
        return {
            "format": self.format,
            "gpus": list(self.gpus),
            "links": [dict(link) for link in self.links],
            "numa": dict(self.numa),
        }

    def summary(self) -> str:
        """Counts per link kind, weights and hops seen, NUMA nodes."""
        out = [f"rocm-smi --showtopo: {len(self.gpus)} GPUs"]
        kinds: dict[str, int] = {}
        for link in self.links:
            key = link["kind"] or "unknown"
            kinds[key] = kinds.get(key, 0) + 1
        out.append("  GPU-GPU: " + ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items())))
        weights = sorted({link["weight"] for link in self.links if link["weight"] is not None})
        hops = sorted({link["hops"] for link in self.links if link["hops"] is not None})
        if weights:
            out.append(f"  weights: {', '.join(map(str, weights))}")
        if hops:
            out.append(f"  hops: {', '.join(map(str, hops))}")
        if self.numa:
            out.append("  NUMA: " + ", ".join(f"{g} {n}" for g, n in self.numa.items()))
        return "\n".join(out)

    def layout(self) -> NodeLayout:
        """The node as ``spec.build_spec`` needs it (link kinds as XGMI / PCIE)."""
        index = {g: i for i, g in enumerate(self.gpus)}
        links = {
            (index[link["a"]], index[link["b"]]): link["kind"]
            for link in self.links
            if link["kind"] in ("XGMI", "PCIE")
        }
        return NodeLayout(
            source="rocm-smi --showtopo",
            gpus=list(self.gpus),
            vendor="amd",
            gpu_links=links,
            numa=[self.numa.get(g) for g in self.gpus] if self.numa else [],
            gaps=list(self.warnings),
        )


def _read(lines: list[str]) -> tuple[list[_Matrix], dict[str, dict[str, str]], list[str]]:
    matrices: list[_Matrix] = []
    numa: dict[str, dict[str, str]] = {}
    titles: list[str] = []
    title: str | None = None
    current: _Matrix | None = None
    for number, line in enumerate(lines, start=1):
        banner = _banner(line)
        if banner is not None:
            title = banner
            titles.append(title)
            current = None
            continue
        if _HEADER.match(line) and len(line.split()) <= MAX_COLUMNS:
            kind = _kind_of(title) if title else None
            current = _Matrix(kind, number, line.split())
            matrices.append(current)
            title = None
            continue
        m = _NUMA.match(line)
        if m:
            numa.setdefault(f"GPU{m.group(1)}", {})[m.group(2).lower()] = m.group(3)
            continue
        row = _ROW.match(line)
        if row and current is not None:
            current.rows[row.group(1)] = row.group(2).split()
            continue
        if line.strip():
            current = None
    return matrices, numa, titles


def parse(text: str) -> RocmTopo:
    """Parse ``rocm-smi --showtopo`` (or ``rocm-smi --showtopoweight`` ...) output.

    Args:
        text: The output as pasted.

    Returns:
        GPUs and pairs, with ``warnings`` for every gap.

    Raises:
        ParseError: No GPU matrix in the text.
    """
    text = clean_text(text)
    if re.search(TOPO_M_ROW, text) or re.search(r"(?m)^[ \t|]*GPU\d+[ \t|]+OK\b", text):
        raise wrong_format(text, EXPECTED, FORMAT)
    matrices, numa_raw, titles = _read(text.split("\n"))
    if not matrices:
        raise wrong_format(text, EXPECTED, FORMAT)
    warnings: list[str] = []
    by_kind: dict[str, _Matrix] = {}
    for matrix in matrices:
        if matrix.kind is None:
            cells = [c for row in matrix.rows.values() for c in row]
            if any(re.fullmatch(r"[A-Za-z]+", c) for c in cells):
                matrix.kind = "type"
            else:
                matrix.kind = next((k for k in _KINDS[:2] if k not in by_kind), "hops")
            name = _KIND_NAMES[matrix.kind]
            warnings.append(
                f"matrix at line {matrix.line} has no title: taken as the {name} matrix "
                "(rocm-smi prints weight, hops, link type in that order)"
            )
        if matrix.kind in by_kind:
            warnings.append(
                f"second {_KIND_NAMES[matrix.kind]} matrix at line {matrix.line} ignored"
            )
            continue
        if matrix.kind in _KINDS:
            by_kind[matrix.kind] = matrix
    gpus: list[str] = []
    for matrix in by_kind.values():
        for column in matrix.columns:
            if column not in gpus:
                gpus.append(column)
    gpus.sort(key=lambda g: int(g[3:]))
    if not gpus:
        raise ParseError("no GPU columns in the rocm-smi matrices")
    for kind in _KINDS:
        found = by_kind.get(kind)
        if found is None:
            warnings.append(f"no {_KIND_NAMES[kind]} matrix in the input")
            continue
        missing = [g for g in found.columns if g not in found.rows]
        short = [g for g, cells in found.rows.items() if len(cells) < len(found.columns)]
        if missing:
            warnings.append(f"{_KIND_NAMES[kind]} matrix truncated: rows {span(missing)} missing")
        if short:
            warnings.append(f"{_KIND_NAMES[kind]} matrix: rows {span(short)} have missing cells")

    def cell(kind: str, a: str, b: str) -> str | None:
        m = by_kind.get(kind)
        if m is None:
            return None
        for row, col in ((a, b), (b, a)):
            cells = m.rows.get(row)
            if cells is not None and col in m.columns:
                k = m.columns.index(col)
                if k < len(cells):
                    return cells[k]
        return None

    def number(value: str | None) -> int | None:
        return int(value) if value is not None and re.fullmatch(r"\d{1,9}", value) else None

    links: list[dict[str, Any]] = []
    inferred = 0
    for i, a in enumerate(gpus):
        for b in gpus[i + 1 :]:
            link_kind = cell("type", a, b)
            weight = number(cell("weight", a, b))
            hops = number(cell("hops", a, b))
            if link_kind is None and "type" not in by_kind and weight == XGMI_WEIGHT:
                link_kind = "XGMI"
                inferred += 1
            if link_kind is None and weight is None and hops is None:
                continue
            links.append(
                {
                    "a": a,
                    "b": b,
                    "kind": link_kind.upper() if link_kind else None,
                    "weight": weight,
                    "hops": hops,
                }
            )
    if inferred:
        warnings.append(
            f"link types not in the input: {inferred} pairs of weight {XGMI_WEIGHT} taken as one "
            "XGMI hop (rocm-smi's XGMI weight)"
        )
    pairs = len(gpus) * (len(gpus) - 1) // 2
    unknown = pairs - sum(1 for link in links if link["kind"])
    if unknown:
        warnings.append(f"link type unknown for {unknown} of {pairs} GPU pairs")
    numa: dict[str, int] = {}
    for gpu, values in numa_raw.items():
        node = values.get("node")
        if node is not None and re.fullmatch(r"\d{1,9}", node):
            numa[gpu] = int(node)
    if not numa_raw:
        cut = any(_kind_of(title) == "numa" for title in titles)
        warnings.append(
            "Numa Nodes block is empty (the output is cut off): NUMA placement unknown"
            if cut
            else "no Numa Nodes block: NUMA placement unknown"
        )
    return RocmTopo(gpus=gpus, links=links, numa=numa, warnings=warnings)
