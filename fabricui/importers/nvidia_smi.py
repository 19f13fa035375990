"""Parse ``nvidia-smi topo -m`` output as people paste it.

Every variant in ``shared/data/topo/nvidia_smi_topo`` is read: raw TAB output and tabs expanded
to the 8-column grid, hand-compacted layouts, markdown tables, indented blocks, headers that
lost their indentation or start with two TABs, glued tokens (``NIC11NIC12``, ``NODEPXB``),
old ``SOC``-era and new ``NIC Legend`` outputs, NIC names in the header (``mlx5_0``) or in a
legend, empty affinity cells, text, prompts and fences around the matrix, a ``topo -p2p``
matrix after it, and fragments without a header. Link cells are read as tokens (they never
contain spaces); the affinity cells after them are matched to the header's columns by position
when some are empty. ``topo -p2p`` matrices alone are rejected.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from fabricui.importers.common import (
    PCIE_CODES,
    NodeLayout,
    ParseError,
    clean_text,
    gpu_id_from_name,
    span,
    wrong_format,
)
from fabricui.importers.paste import drop_prompts, markdown_tables
from fabricui.importers.topo_matrix import (
    EXTRA_KEYS,
    P2P_CODES,
    Block,
    Row,
    headerless_block,
    read_blocks,
)

FORMAT = "nvidia-smi"
EXPECTED = "`nvidia-smi topo -m` output"

_GPU_LABEL = re.compile(r"GPU(\d{1,6})")
_LEGEND_NIC = re.compile(r"^\s*(?:[-*]\s*)?NIC(\d{1,6})\s*:\s*(\S+)\s*$")
#: ``GPU 0: NVIDIA H100 (UUID: ...)`` or ``Product Name : ...``; the name is trimmed in code
#: (a lazy name before ``\s*$`` is quadratic on a long run of blanks).
_GPU_NAME = re.compile(r"(?:^|\s)GPU\s*\d+\s*:\s*(.+)$|Product Name\s*:\s*(.+)$")


@dataclass
class NvidiaSmiTopo:
    """A parsed ``nvidia-smi topo -m`` matrix."""

    gpus: list[str]
    """GPU labels (``GPU0`` ...), in column order."""
    nics: list[str]
    """NIC device names where known (legend or old-style header), else ``NICn``."""
    nic_columns: list[str]
    """NIC column labels as printed (``NIC0`` or ``mlx5_0``)."""
    links: list[tuple[str, str, str]]
    """(a, b, kind) for every known GPU-GPU and GPU-NIC pair; ``SOC`` reported as ``SYS``."""
    cpu_affinity: dict[str, str] = field(default_factory=dict)
    """GPU -> CPU list (``0-47``), for GPUs whose cell is not empty."""
    numa: dict[str, int | str] = field(default_factory=dict)
    """GPU -> NUMA node; a range or list (``6-7``) stays text."""
    gpu_numa: dict[str, int] = field(default_factory=dict)
    """GPU -> GPU NUMA ID (recent drivers; N/A on most machines)."""
    gpu_names: list[str] = field(default_factory=list)
    """Product names found around the matrix (``GPU 0: NVIDIA H100 80GB HBM3``)."""
    matrix: dict[tuple[str, str], str] = field(default_factory=dict)
    """(row label, column label) -> cell as printed, for the summary."""
    warnings: list[str] = field(default_factory=list)
    """Stated gaps: truncation, missing legend, misaligned or empty cells."""
    notes: list[str] = field(default_factory=list)
    """Remarks that are not gaps (an ignored ``topo -p2p`` matrix)."""
    format: str = FORMAT
    """Importer name."""

    def to_json(self) -> dict[str, object]:
        """The ``--json`` shape: format, gpus, nics, links, cpu_affinity, numa."""
        return {
            "format": self.format,
            "gpus": list(self.gpus),
            "nics": list(self.nics),
            "links": [{"a": a, "b": b, "kind": kind} for a, b, kind in self.links],
            "cpu_affinity": dict(self.cpu_affinity),
            "numa": dict(self.numa),
        }

    def link(self, a: str, b: str) -> str | None:
        """The kind of the a-b pair (either order), or None when unknown."""
        for x, y, kind in self.links:
            if (x, y) in ((a, b), (b, a)):
                return kind
        return None

    def nearest_nics(self) -> dict[str, tuple[list[str], str]]:
        """GPU -> (its nearest NICs, their path code), for GPUs whose NIC paths are all known."""
        out: dict[str, tuple[list[str], str]] = {}
        for gpu in self.gpus:
            paths = [(n, self.link(gpu, n)) for n in self.nics]
            known = [(n, k) for n, k in paths if k in PCIE_CODES]
            if not known or len(known) < len(paths):
                continue
            best = min(PCIE_CODES.index(k) for _, k in known if k)
            code = PCIE_CODES[best]
            out[gpu] = ([n for n, k in known if k == code], code)
        return out

    def summary(self) -> str:
        """A text summary: counts, NICs, link kinds, nearest NICs, affinity and the matrix."""
        lines = [f"nvidia-smi topo -m: {len(self.gpus)} GPUs, {len(self.nics)} NICs"]
        if self.gpu_names:
            lines.append(f"  GPU names: {'; '.join(dict.fromkeys(self.gpu_names))}")
        if self.nics:
            named = [n if n == c else f"{c}={n}" for c, n in zip(self.nic_columns, self.nics)]
            lines.append(f"  NICs: {', '.join(named)}")
        gpu_set = set(self.gpus)
        gg = Counter(k for a, b, k in self.links if a in gpu_set and b in gpu_set)
        gn = Counter(k for a, b, k in self.links if not (a in gpu_set and b in gpu_set))
        lines.append(f"  GPU-GPU: {_counts(gg) or 'none known'}")
        if self.nics:
            lines.append(f"  GPU-NIC: {_counts(gn) or 'none known'}")
            near = self.nearest_nics()
            if near:
                text = ", ".join(f"{g}->{'/'.join(n)} ({c})" for g, (n, c) in near.items())
                lines.append(f"  nearest NIC: {text}")
        if self.cpu_affinity or self.numa:
            parts = []
            for gpu in self.gpus:
                cpu, numa = self.cpu_affinity.get(gpu), self.numa.get(gpu)
                if cpu is None and numa is None:
                    continue
                parts.append(
                    f"{gpu} {cpu or '?'}" + (f" (NUMA {numa})" if numa is not None else "")
                )
            lines.append(f"  CPU affinity: {', '.join(parts)}")
        lines.append("  matrix ('?' = not in the input):")
        columns = self.gpus + self.nic_columns
        width = max(5, *(len(c) + 1 for c in columns))
        lines.append("    " + " " * width + "".join(f"{c:<{width}}" for c in columns))
        for row in columns:
            if not any((row, c) in self.matrix for c in columns):
                continue
            cells = "".join(f"{self.matrix.get((row, c), '?'):<{width}}" for c in columns)
            lines.append(f"    {row:<{width}}{cells}")
        return "\n".join(lines)

    def layout(self) -> NodeLayout:
        """The node as ``spec.build_spec`` needs it."""
        index = {g: i for i, g in enumerate(self.gpus)}
        nic_index = {n: k for k, n in enumerate(self.nics)}
        gpu_links: dict[tuple[int, int], str] = {}
        nic_paths: dict[tuple[int, int], str] = {}
        for a, b, kind in self.links:
            if a in index and b in index:
                i, j = sorted((index[a], index[b]))
                gpu_links[(i, j)] = kind
            elif a in index and b in nic_index:
                nic_paths[(index[a], nic_index[b])] = kind
        numa = [self.numa.get(g) for g in self.gpus]
        model, reason = None, ""
        for name in self.gpu_names:
            known, gpu_id = gpu_id_from_name(name)
            if known:
                model = gpu_id
                reason = f"named {name!r} in the input" + (
                    "" if gpu_id else " (not in the catalog)"
                )
                break
        return NodeLayout(
            source="nvidia-smi topo -m",
            gpus=list(self.gpus),
            nics=list(self.nics),
            gpu_links=gpu_links,
            nic_paths=nic_paths,
            numa=[n if isinstance(n, int) else None for n in numa],
            cpu_affinity=[self.cpu_affinity.get(g) for g in self.gpus],
            gpu_model=model,
            gpu_model_reason=reason,
            gaps=list(self.warnings),
        )


def _counts(counter: Counter[str]) -> str:
    def order(item: tuple[str, int]) -> tuple[int, int, str]:
        kind = item[0]
        nv = re.fullmatch(r"NV(\d{1,6})", kind)
        if nv:
            return (0, -int(nv.group(1)), kind)
        rank = PCIE_CODES.index(kind) if kind in PCIE_CODES else 9
        return (1, rank, kind)

    return ", ".join(f"{k} x{n}" for k, n in sorted(counter.items(), key=order))


def _assign_extras(
    row: Row, columns: list[tuple[int, str]], shift: int, warnings: list[str]
) -> dict[str, str]:
    """Match the cells after the link cells to the affinity columns.

    Equal counts match in order. With fewer cells (empty ones are invisible once tabs become
    spaces), each cell goes to the column whose start is nearest, keeping the order.
    """
    cells = [(pos, text) for pos, text in row.extras]
    keys = [key for _, key in columns]
    if row.markdown or len(cells) == len(keys) or not keys:
        if len(cells) > len(keys) and keys:
            warnings.append(
                f"row {row.label} has {len(cells)} cells after the links for "
                f"{len(keys)} affinity columns: extra cells ignored"
            )
        return {k: t for k, (_, t) in zip(keys, cells)}
    if len(cells) > len(keys):
        warnings.append(
            f"row {row.label} has {len(cells)} cells after the links for "
            f"{len(keys)} affinity columns: extra cells ignored"
        )
        return {k: t for k, (_, t) in zip(keys, cells)}
    out: dict[str, str] = {}
    next_col = 0
    for n, (pos, text) in enumerate(cells):
        last = len(columns) - (len(cells) - n)
        # Ties go to the later column: nvidia-smi always fills its last column (GPU NUMA ID),
        # and an empty cell before a value moves the value left of its column, never right.
        best = min(
            range(next_col, last + 1),
            key=lambda c: (abs(pos - shift - columns[c][0]), -c),
        )
        out[columns[best][1]] = text
        next_col = best + 1
    return out


def _headerless_labels(block: Block, warnings: list[str]) -> list[str]:
    """Column labels of a matrix whose header was cut off, inferred from the rows."""
    width = max(len(r.codes) for r in block.rows)
    n_gpu = None
    names: dict[int, str] = {}
    for row in block.rows:
        if "X" not in row.codes:
            continue
        x = row.codes.index("X")
        m = re.fullmatch(r"NIC(\d{1,6})", row.label)
        if m and n_gpu is None:
            n_gpu = x - int(m.group(1))
        if not _GPU_LABEL.fullmatch(row.label) and not m:
            names[x] = row.label
    if n_gpu is None:
        gpu_rows = [int(g.group(1)) for r in block.rows if (g := _GPU_LABEL.fullmatch(r.label))]
        nv_cols = [k for r in block.rows for k, c in enumerate(r.codes) if c.startswith("NV")]
        first_named = min(names) if names else width
        n_gpu = min(first_named, max([*(g + 1 for g in gpu_rows), *(k + 1 for k in nv_cols), 0]))
    n_gpu = max(0, min(n_gpu, width))
    labels = [f"GPU{k}" for k in range(n_gpu)]
    labels += [names.get(k, f"NIC{k - n_gpu}") for k in range(n_gpu, width)]
    nic_text = f" and {span(labels[n_gpu:])}" if width > n_gpu else ""
    warnings.append(
        f"header line missing (an excerpt): columns inferred as {span(labels[:n_gpu])}{nic_text}"
    )
    return labels


#: A line of the matrix (its header or a row), markdown or not.
_DATA_LINE = re.compile(r"^\s*(?:\|\s*)?(?:GPU\d|NIC\d|mlx\w*_\d)")


def _repaired(lines: list[str]) -> tuple[list[str], list[str]]:
    """The lines without shell prompts inside the output, Markdown table rows as the parser
    reads them; and a warning for each repair."""
    prompts = drop_prompts(lines, lambda line: _DATA_LINE.match(line) is not None)
    tables = markdown_tables(prompts.lines)
    return tables.lines, [*prompts.warnings, *tables.warnings]


def parse(text: str) -> NvidiaSmiTopo:
    """Parse ``nvidia-smi topo -m`` output.

    Args:
        text: The output as pasted, with any text around it.

    Returns:
        The matrix, with ``warnings`` stating every gap (truncation, missing legend, ...).

    Raises:
        ParseError: No ``topo -m`` matrix in the text (a ``topo -p2p`` matrix is named).
    """
    text = clean_text(text)
    raw_lines, repairs = _repaired(text.split("\n"))
    lines = [line.expandtabs(8) for line in raw_lines]
    warnings: list[str] = list(repairs)
    notes: list[str] = []
    block = _topo_block(text, lines, warnings, notes)
    if block.header is not None:
        labels = block.header.labels
        extra_cols = block.header.extras
    else:
        labels = _headerless_labels(block, warnings)
        extra_cols = [(-1, key) for key in EXTRA_KEYS]
    rows: dict[str, Row] = {}
    for row in block.rows:
        if row.label in rows:
            warnings.append(f"row {row.label} appears twice (line {row.line}): first one kept")
            continue
        rows[row.label] = row
    matrix = _cells(rows, labels, warnings)
    gpus = [label for label in labels if _GPU_LABEL.fullmatch(label)]
    nic_columns = [label for label in labels if label not in gpus]
    nics = _nic_names(lines, nic_columns, warnings)
    links = _links(matrix, gpus, nic_columns, nics, warnings)
    _warn_truncated(rows, gpus, nic_columns, nics, links, warnings)
    cpu_affinity, numa, gpu_numa = _affinities(block, rows, gpus, extra_cols, warnings)
    names = _gpu_names(lines, block)
    if not gpus:
        raise ParseError("the `topo -m` matrix has no GPU columns")
    return NvidiaSmiTopo(
        gpus=gpus,
        nics=nics,
        nic_columns=nic_columns,
        links=links,
        cpu_affinity=cpu_affinity,
        numa=numa,
        gpu_numa=gpu_numa,
        gpu_names=names,
        matrix={(k[0], k[1]): v for k, v in matrix.items()},
        warnings=warnings,
        notes=notes,
    )


def _topo_block(text: str, lines: list[str], warnings: list[str], notes: list[str]) -> Block:
    """The ``topo -m`` matrix that is read: the first one (or a fragment without header);
    a ``topo -p2p`` matrix beside it is noted, another ``topo -m`` matrix warned about.

    Raises:
        ParseError: No ``topo -m`` matrix (a ``topo -p2p`` matrix alone is named).
    """
    blocks = read_blocks(lines)
    topo = [b for b in blocks if b.kind == "topo"]
    p2p = [b for b in blocks if b.kind == "p2p"]
    if not topo:
        headerless = headerless_block(lines)
        if headerless is not None and len(headerless.rows) >= 1 and not p2p:
            topo = [headerless]
    if not topo:
        if p2p:
            codes = sorted({c for b in p2p for r in b.rows for c in r.codes} & P2P_CODES)
            raise ParseError(
                "this is a `nvidia-smi topo -p2p` matrix (P2P capability, cells "
                f"{'/'.join(codes)}), not `topo -m`: run `nvidia-smi topo -m`"
            )
        raise wrong_format(text, EXPECTED, FORMAT)
    block = topo[0]
    for other in blocks:
        if other is block or other.kind == "empty":
            continue
        if other.kind == "p2p":
            notes.append(
                f"ignored a `nvidia-smi topo -p2p` matrix (P2P capability) at line {other.line}"
            )
        else:
            warnings.append(
                f"another `topo -m` matrix at line {other.line} ignored: only the first "
                f"(line {block.line}) is read"
            )
    return block


def _cells(
    rows: dict[str, Row], labels: list[str], warnings: list[str]
) -> dict[tuple[str, str], str]:
    """(row, column) -> link code; rows with no column, too few or too many cells, or an
    ``X`` off the diagonal are warned about (the cells read are kept)."""
    width = len(labels)
    matrix: dict[tuple[str, str], str] = {}
    long_rows, short_rows, misaligned, unknown_rows = [], [], [], []
    for row in rows.values():
        if row.label not in labels:
            unknown_rows.append(row.label)
            continue
        if len(row.codes) < width:
            short_rows.append(f"{row.label} ({len(row.codes)} of {width})")
        elif len(row.codes) > width:
            long_rows.append(row.label)
        own = labels.index(row.label)
        if own < len(row.codes) and row.codes[own] != "X":
            where = row.codes.index("X") if "X" in row.codes else None
            misaligned.append(
                f"{row.label} (X in column {labels[where] if where is not None else 'none'})"
            )
        for col, code in zip(labels, row.codes):
            matrix[(row.label, col)] = code
    if unknown_rows:
        warnings.append(f"rows {', '.join(unknown_rows)} have no header column: ignored")
    if short_rows:
        warnings.append(f"rows with missing link cells: {', '.join(short_rows)}")
    if long_rows:
        warnings.append(
            f"rows {', '.join(long_rows)} have more link cells than the header has columns "
            f"({width}): the extra cells are ignored"
        )
    if misaligned:
        warnings.append(
            f"'X' off the diagonal in rows {', '.join(misaligned)}: columns may be shifted"
        )
    return matrix


def _nic_names(lines: list[str], nic_columns: list[str], warnings: list[str]) -> list[str]:
    """Each NIC column's device name: from the ``NIC Legend`` for ``NICn`` columns (kept as
    ``NICn`` when the legend lacks it, warned), as printed otherwise (``mlx5_0``)."""
    legend: dict[str, str] = {}
    for line in lines:
        m = _LEGEND_NIC.match(line)
        if m:
            legend.setdefault(f"NIC{m.group(1)}", m.group(2))
    aliases = [c for c in nic_columns if re.fullmatch(r"NIC\d+", c)]
    if aliases and not legend:
        warnings.append(f"NIC legend missing: NIC names unknown, kept as {span(aliases)}")
    elif aliases:
        lacking = [c for c in aliases if c not in legend]
        if lacking:
            warnings.append(f"NIC legend lacks {span(lacking)}: kept those names")
    return [legend.get(c, c) for c in nic_columns]


def _cell(matrix: dict[tuple[str, str], str], a: str, b: str, asym: list[str]) -> str | None:
    """The link between ``a`` and ``b`` (``SOC`` read as ``SYS``), None for none or ``X``:
    ``a``'s row, else ``b``'s; a pair whose two cells disagree is added to ``asym``."""
    one, two = matrix.get((a, b)), matrix.get((b, a))
    one = "SYS" if one == "SOC" else one
    two = "SYS" if two == "SOC" else two
    if one and two and one != two:
        asym.append(f"{a}-{b} {one}/{two}")
    value = one or two
    return None if value in (None, "X") else value


def _links(
    matrix: dict[tuple[str, str], str],
    gpus: list[str],
    nic_columns: list[str],
    nics: list[str],
    warnings: list[str],
) -> list[tuple[str, str, str]]:
    """(a, b, kind) of every known GPU-GPU and GPU-NIC pair (NICs by device name); an
    asymmetric matrix is warned about."""
    rename = dict(zip(nic_columns, nics))
    links: list[tuple[str, str, str]] = []
    asym: list[str] = []
    for i, a in enumerate(gpus):
        for b in gpus[i + 1 :]:
            kind = _cell(matrix, a, b, asym)
            if kind is not None:
                links.append((a, b, kind))
    for a in gpus:
        for col in nic_columns:
            kind = _cell(matrix, a, col, asym)
            if kind is not None:
                links.append((a, rename[col], kind))
    if asym:
        warnings.append(
            f"matrix not symmetric ({', '.join(asym[:4])}"
            f"{', ...' if len(asym) > 4 else ''}): the row of the lower-numbered device is used"
        )
    return links


def _warn_truncated(
    rows: dict[str, Row],
    gpus: list[str],
    nic_columns: list[str],
    nics: list[str],
    links: list[tuple[str, str, str]],
    warnings: list[str],
) -> None:
    """Warn about a cut-off paste: missing GPU or NIC rows, and the paths they leave unknown."""
    missing_gpu = [g for g in gpus if g not in rows]
    missing_nic = [c for c in nic_columns if c not in rows]
    if missing_gpu:
        known = {(a, b) for a, b, _ in links}
        unknown_pairs = sum(
            1 for i, a in enumerate(gpus) for b in gpus[i + 1 :] if (a, b) not in known
        )
        lost = f" ({unknown_pairs} GPU pairs unknown)" if unknown_pairs else ""
        warnings.append(f"truncated: rows for {span(missing_gpu)} missing{lost}")
    known_pairs = {(a, b) for a, b, _ in links}
    blind: dict[tuple[str, ...], list[str]] = {}
    for gpu in gpus:
        unknown = tuple(n for n in nics if (gpu, n) not in known_pairs)
        if unknown:
            blind.setdefault(unknown, []).append(gpu)
    if blind:
        parts = [f"{span(g)} to {span(list(n))}" for n, g in blind.items()]
        warnings.append(f"GPU-NIC paths unknown: {'; '.join(parts)}")
    if missing_nic:
        only = " (only NIC-to-NIC paths are lost)" if not missing_gpu else ""
        warnings.append(f"truncated: rows for {span(missing_nic)} missing{only}")


def _affinities(
    block: Block,
    rows: dict[str, Row],
    gpus: list[str],
    extra_cols: list[tuple[int, str]],
    warnings: list[str],
) -> tuple[dict[str, str], dict[str, int | str], dict[str, int]]:
    """Each GPU's (CPU affinity, NUMA node, GPU NUMA ID) from the cells after its links;
    empty cells and NUMA ranges are warned about."""
    cpu_affinity: dict[str, str] = {}
    numa: dict[str, int | str] = {}
    gpu_numa: dict[str, int] = {}
    keys = {key for _, key in extra_cols}
    empty: dict[str, list[str]] = {"cpu": [], "numa": []}
    ranges: list[str] = []
    shift = _header_shift(block, rows)
    for gpu in gpus:
        gpu_row = rows.get(gpu)
        if gpu_row is None:
            continue
        values = _assign_extras(gpu_row, extra_cols, shift, warnings)
        cpu = values.get("cpu", "").strip()
        if cpu and cpu != "N/A":
            cpu_affinity[gpu] = cpu
        elif "cpu" in keys and not cpu:
            empty["cpu"].append(gpu)
        node = values.get("numa", "").strip()
        if re.fullmatch(r"\d{1,6}", node):
            numa[gpu] = int(node)
        elif node and node != "N/A":
            numa[gpu] = node
            ranges.append(f"{gpu}: {node}")
        elif "numa" in keys and not node:
            empty["numa"].append(gpu)
        gnuma = values.get("gpu_numa", "").strip()
        if re.fullmatch(r"\d{1,6}", gnuma):
            gpu_numa[gpu] = int(gnuma)
    if empty["cpu"]:
        warnings.append(f"CPU affinity empty for {span(empty['cpu'])} (a container or VM view?)")
    if empty["numa"]:
        warnings.append(f"NUMA affinity empty for {span(empty['numa'])}")
    if ranges:
        warnings.append(
            f"NUMA affinity is a range or list ({', '.join(ranges[:2])}"
            f"{', ...' if len(ranges) > 2 else ''}): kept as text, no single NUMA node"
        )
    return cpu_affinity, numa, gpu_numa


def _header_shift(block: Block, rows: dict[str, Row]) -> int:
    """Columns the rows sit right of the header [characters]: a header shifted by whole
    tab stops (two leading TABs) moves every column."""
    if block.header is None or not block.header.label_pos or block.header.label_pos[0] < 0:
        return 0
    first = next((r for r in rows.values() if r.code_pos and r.code_pos[0] >= 0), None)
    if first is None:
        return 0
    return 8 * round((first.code_pos[0] - block.header.label_pos[0]) / 8)


def _gpu_names(lines: list[str], block: Block) -> list[str]:
    """GPU product names printed around the matrix (``GPU 0: NVIDIA H100 (UUID: ...)``,
    ``Product Name : ...``), in order."""
    names = []
    in_block = {r.line for r in block.rows} | ({block.header.line} if block.header else set())
    for number, line in enumerate(lines, start=1):
        if number in in_block:
            continue
        m = _GPU_NAME.search(line)
        if m:
            name = (m.group(1) or m.group(2)).split("(UUID", 1)[0].strip()
            if name:
                names.append(name)
    return names
